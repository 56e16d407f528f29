package validate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// CheckContainers checks the environment of every container that runs a
// Sundial service (CheckEnv), and that each service has a Deployment.
func CheckContainers(objs []Object) error {
	r, err := decodeRendering(objs)
	if err != nil {
		return err
	}
	var errs []error
	deployed := map[string]bool{}
	for _, w := range r.workloads {
		for _, c := range w.template.Spec.Containers {
			service := serviceOf(c.Command)
			if service == "" {
				continue
			}
			if w.kind == "Deployment" {
				deployed[service] = true
			}
			env, err := r.containerEnv(c)
			if err == nil {
				err = CheckEnv(service, env)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s container %s: %w", w.kind, w.name, c.Name, err))
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(services)) {
		if !deployed[s] {
			errs = append(errs, fmt.Errorf("no Deployment runs %s", s))
		}
	}
	return errors.Join(errs...)
}

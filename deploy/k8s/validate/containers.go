package validate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// CheckContainers checks the environment of every container, init
// containers included, that runs a Sundial service or `gateway migrate`
// (CheckEnv), and that each runs in a Deployment.
func CheckContainers(objs []Object) error {
	r, err := decodeRendering(objs)
	if err != nil {
		return err
	}
	var errs []error
	deployed := map[string]bool{}
	for _, w := range r.workloads {
		for _, c := range slices.Concat(w.template.Spec.InitContainers, w.template.Spec.Containers) {
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

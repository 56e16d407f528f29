package validate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/sundial-run/sundial/pkg/secretbox"
)

// composeEnv is the shell environment the Compose file is interpolated
// with: only what its instructions tell the operator to set.
var composeEnv = []string{secretbox.EnvVar + "=" + secretStandIn(secretbox.EnvVar)}

// CheckCompose loads the Compose file at path with the Compose
// specification's own loader (its schema, interpolation, merges and
// anchors), then checks every Sundial container's environment (CheckEnv)
// and that each service runs.
func CheckCompose(path string) error {
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithEnv(composeEnv),
		cli.WithName("sundial"),
	)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var errs []error
	running := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(project.Services)) {
		svc := project.Services[name]
		service := serviceOf(svc.Command)
		if service == "" {
			continue
		}
		running[service] = true
		env := map[string]string{}
		for k, v := range svc.Environment {
			env[k] = ""
			if v != nil {
				env[k] = *v
			}
		}
		if err := CheckEnv(service, env); err != nil {
			errs = append(errs, fmt.Errorf("%s: service %s: %w", path, name, err))
		}
	}
	for _, s := range slices.Sorted(maps.Keys(services)) {
		if !running[s] {
			errs = append(errs, fmt.Errorf("%s: no service runs %s", path, s))
		}
	}
	return errors.Join(errs...)
}

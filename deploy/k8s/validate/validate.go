// Package validate checks Sundial's deployment files offline, as an API
// server and Docker Compose would read them: every kustomize overlay under
// deploy/k8s renders; every object it renders decodes strictly (an unknown
// field is an error) into its Kubernetes API type, or validates against its
// custom resource definition (vendored in schemas/, with pruning, OpenAPI
// and CEL rules as the API server applies them); every overlay's
// nats-values.yaml uses only keys the NATS chart has; and every Sundial
// container, in the overlays and in docker-compose.yml, gets a
// configuration its service accepts, with every variable a deployment must
// set (see env.go). docs/operations.md describes the files.
package validate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// K8sDir is where the kustomizations are, relative to the repository root.
const K8sDir = "deploy/k8s"

// ComposeFile is the Docker Compose file, relative to the repository root.
const ComposeFile = "docker-compose.yml"

// NATSValuesFile is the name of an overlay's values for the NATS chart.
const NATSValuesFile = "nats-values.yaml"

// Overlays lists the directories under dir that hold a kustomization.yaml,
// base among them (it must render alone too), sorted.
func Overlays(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list overlays: %w", err)
	}
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "kustomization.yaml")); e.IsDir() && err == nil {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no kustomization under %s", dir)
	}
	return out, nil
}

// Overlay renders the kustomization in dir and checks what it renders:
// each object against its schema, the references between objects, the
// Sundial containers' configuration, and the NATS values beside it. It
// returns the rendered YAML and every problem found.
func Overlay(dir string) ([]byte, error) {
	objs, rendered, err := Render(dir)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, o := range objs {
		errs = append(errs, CheckObject(o))
	}
	errs = append(errs, CheckReferences(objs), CheckContainers(objs))
	values := filepath.Join(dir, NATSValuesFile)
	if _, err := os.Stat(values); err == nil {
		errs = append(errs, CheckNATSValues(values))
	}
	return rendered, errors.Join(errs...)
}

// All checks every overlay under root's deploy/k8s and root's
// docker-compose.yml, and writes each overlay's rendering to out/NAME.yaml
// when out is not empty.
func All(root, out string) error {
	dir := filepath.Join(root, K8sDir)
	names, err := Overlays(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		rendered, err := Overlay(filepath.Join(dir, name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", K8sDir, name, err))
			continue
		}
		if out != "" {
			errs = append(errs, writeRendering(out, name, rendered))
		}
	}
	errs = append(errs, CheckCompose(filepath.Join(root, ComposeFile)))
	return errors.Join(errs...)
}

func writeRendering(out, name string, rendered []byte) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("write rendering: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, name+".yaml"), rendered, 0o644); err != nil {
		return fmt.Errorf("write rendering: %w", err)
	}
	return nil
}

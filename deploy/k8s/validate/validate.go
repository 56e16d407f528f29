// Package validate checks Sundial's deployment files offline, as an API
// server and Docker Compose would read them: the Helm chart charts/sundial
// renders, with helm's own library, for each shape (Shapes: the small and
// HA shapes, and renderings with the optional parts on or off), and passes
// helm lint; every object it renders decodes strictly (an unknown field is
// an error) into its Kubernetes API type, or validates against its custom
// resource definition (vendored in schemas/, with pruning, OpenAPI and CEL
// rules as the API server applies them); the references between objects
// hold; the values files for the NATS chart use only keys that chart has;
// and every Sundial container, in the chart and in docker-compose.yml, gets
// a configuration its service accepts, with every variable a deployment
// must set (see env.go). docs/operations.md describes the files.
package validate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ChartDir is the chart, relative to the repository root.
const ChartDir = "charts/sundial"

// ComposeFile is the Docker Compose file, relative to the repository root.
const ComposeFile = "docker-compose.yml"

// Shape is one rendering of the chart that is checked.
type Shape struct {
	Name string
	// Values files relative to the chart, over its values.yaml.
	ValueFiles []string
	// The values for the NATS chart that go with it, relative to the
	// repository root; "" for none.
	NATSValues string
}

// Shapes are the renderings checked: the two shapes docs/operations.md
// installs, and the optional parts (monitoring, backups, OTLP, PostgreSQL
// of one's own) on each, with the values files of the chart's ci/.
var Shapes = []Shape{
	{Name: "small", NATSValues: "deploy/nats/values-small.yaml"},
	{Name: "ha", ValueFiles: []string{"values-ha.yaml"}, NATSValues: "deploy/nats/values-ha.yaml"},
	{Name: "ha-full", ValueFiles: []string{"values-ha.yaml", "ci/full-values.yaml"}},
	{Name: "small-snapshot", ValueFiles: []string{"ci/snapshot-values.yaml"}},
	{Name: "external-db", ValueFiles: []string{"ci/external-db-values.yaml"}},
}

// Check checks rendered objects: each against its schema, the references
// between them and the Sundial containers' configuration.
func Check(objs []Object) error {
	var errs []error
	for _, o := range objs {
		errs = append(errs, CheckObject(o))
	}
	errs = append(errs, CheckReferences(objs), CheckContainers(objs))
	return errors.Join(errs...)
}

// CheckChart renders the chart in dir with vals, lints it and checks what
// it renders (Check). It returns the rendering and every problem found.
func CheckChart(dir string, vals Values) ([]byte, error) {
	objs, rendered, err := Render(dir, vals)
	if err != nil {
		return nil, err
	}
	return rendered, errors.Join(Lint(dir, vals), Check(objs))
}

// All checks every shape of the chart under root, the NATS values files
// and root's docker-compose.yml, and writes each shape's rendering to
// out/NAME.yaml when out is not empty.
func All(root, out string) error {
	dir := filepath.Join(root, ChartDir)
	var errs []error
	for _, s := range Shapes {
		rendered, err := CheckChart(dir, Values{Files: chartPath(dir, s.ValueFiles)})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s, shape %s: %w", ChartDir, s.Name, err))
		}
		if s.NATSValues != "" {
			errs = append(errs, CheckNATSValues(filepath.Join(root, s.NATSValues)))
		}
		if out != "" && rendered != nil {
			errs = append(errs, writeRendering(out, s.Name, rendered))
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

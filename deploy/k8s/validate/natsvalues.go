package validate

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"slices"

	"sigs.k8s.io/yaml"
)

// chartValues is the NATS chart's own values.yaml (schemas/README.md): the
// chart has no values.schema.json, so its defaults are the list of keys it
// reads.
//
//go:embed schemas/nats-chart-values.yaml
var chartValues []byte

// CheckNATSValues reports every key of the values file at path that the
// NATS chart does not have, and every value whose kind (map or not)
// differs from the chart's default. Keys below `merge` (merged into the
// generated configuration or object) and below maps that are empty in the
// chart (labels, annotations, topologySpreadConstraints) are free-form.
func CheckNATSValues(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("nats values: %w", err)
	}
	var defaults, values map[string]any
	if err := yaml.Unmarshal(chartValues, &defaults); err != nil {
		return fmt.Errorf("nats chart values: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &values); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := compareValues("", values, defaults); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func compareValues(prefix string, values, defaults map[string]any) error {
	var errs []error
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		path := prefix + k
		def, ok := defaults[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: the NATS chart has no such value", path))
			continue
		}
		defMap, defIsMap := def.(map[string]any)
		valMap, valIsMap := values[k].(map[string]any)
		switch {
		case def == nil, k == "merge", defIsMap && len(defMap) == 0 && valIsMap:
			// free-form
		case defIsMap != valIsMap:
			errs = append(errs, fmt.Errorf("%s: want %s, as the chart's default", path, kindOf(defIsMap)))
		case defIsMap:
			errs = append(errs, compareValues(path+".", valMap, defMap))
		}
	}
	return errors.Join(errs...)
}

func kindOf(isMap bool) string {
	if isMap {
		return "a map"
	}
	return "a value that is not a map"
}

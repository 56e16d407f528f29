package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"
)

// Object is one rendered object: its identity and its JSON.
type Object struct {
	APIVersion string
	Kind       string
	Name       string
	JSON       []byte
}

func (o Object) String() string { return o.Kind + "/" + o.Name }

// Release is the release name and namespace the chart is rendered for, as
// docs/operations.md installs it.
const (
	Release   = "sundial"
	Namespace = "sundial"
)

// kubeVersion is the Kubernetes version the chart is rendered and linted
// for: that of the k8s.io/api the objects are decoded with.
var kubeVersion = chartutil.KubeVersion{Version: "v1.37.0", Major: "1", Minor: "37"}

// Values are the values of one rendering, as helm's -f and --set take them.
type Values struct {
	Files []string // paths, later ones over earlier ones, all over the chart's values.yaml
	Set   []string // --set expressions, over the files
}

func (v Values) merge() (map[string]any, error) {
	opts := values.Options{ValueFiles: v.Files, Values: v.Set}
	vals, err := opts.MergeValues(getter.Providers{})
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	return vals, nil
}

// documentSep splits a template's output into YAML documents.
var documentSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Render renders the chart in dir with vals as `helm template` does for
// the release Release in Namespace (strictly: a template reading a value
// that is not there is an error), and returns its objects and the
// rendering, each document preceded by its template's name.
func Render(dir string, vals Values) ([]Object, []byte, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("render: %w", err)
	}
	merged, err := vals.merge()
	if err != nil {
		return nil, nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = kubeVersion
	opts := chartutil.ReleaseOptions{Name: Release, Namespace: Namespace, Revision: 1, IsInstall: true}
	renderValues, err := chartutil.ToRenderValues(ch, merged, opts, caps)
	if err != nil {
		return nil, nil, fmt.Errorf("render: %w", err)
	}
	files, err := engine.Engine{Strict: true}.Render(ch, renderValues)
	if err != nil {
		return nil, nil, fmt.Errorf("render: %w", err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if base := path.Base(name); strings.HasSuffix(base, ".yaml") && !strings.HasPrefix(base, "_") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var objs []Object
	var rendered bytes.Buffer
	var errs []error
	for _, name := range names {
		for _, doc := range documentSep.Split(files[name], -1) {
			o, err := decodeDocument(doc)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			if o == nil {
				continue
			}
			objs = append(objs, *o)
			fmt.Fprintf(&rendered, "---\n# Source: %s\n%s\n", name, strings.Trim(doc, "\n"))
		}
	}
	return objs, rendered.Bytes(), errors.Join(errs...)
}

// decodeDocument reads one YAML document strictly (a duplicate key is an
// error); nil when it holds no object (only comments, or nothing).
func decodeDocument(doc string) (*Object, error) {
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return nil, err
	}
	if string(bytes.TrimSpace(js)) == "null" {
		return nil, nil
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, err
	}
	if head.APIVersion == "" || head.Kind == "" || head.Metadata.Name == "" {
		return nil, fmt.Errorf("a document without apiVersion, kind or metadata.name")
	}
	return &Object{APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Metadata.Name, JSON: js}, nil
}

// Lint runs helm lint's rules on the chart in dir with vals (the chart's
// metadata, its values, its templates rendered and parsed, its
// dependencies), as `helm lint --strict` does: a warning is a problem too.
func Lint(dir string, vals Values) error {
	merged, err := vals.merge()
	if err != nil {
		return err
	}
	linter := lint.AllWithKubeVersion(dir, merged, Namespace, &kubeVersion)
	var errs []error
	for _, m := range linter.Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, fmt.Errorf("helm lint: %s", m))
		}
	}
	return errors.Join(errs...)
}

// chartPath joins a path relative to the chart to the chart's directory.
func chartPath(dir string, rel []string) []string {
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(dir, r)
	}
	return out
}

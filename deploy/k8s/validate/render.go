package validate

import (
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Object is one rendered object: its identity and its JSON.
type Object struct {
	APIVersion string
	Kind       string
	Name       string
	JSON       []byte
}

func (o Object) String() string { return o.Kind + "/" + o.Name }

// Render builds the kustomization in dir as `kustomize build` does, with
// the default options (files only from within the kustomization's root).
func Render(dir string) ([]Object, []byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, nil, fmt.Errorf("render: %w", err)
	}
	rendered, err := m.AsYaml()
	if err != nil {
		return nil, nil, fmt.Errorf("render: %w", err)
	}
	var objs []Object
	for _, r := range m.Resources() {
		js, err := r.MarshalJSON()
		if err != nil {
			return nil, nil, fmt.Errorf("render %s/%s: %w", r.GetKind(), r.GetName(), err)
		}
		objs = append(objs, Object{APIVersion: r.GetApiVersion(), Kind: r.GetKind(), Name: r.GetName(), JSON: js})
	}
	return objs, rendered, nil
}

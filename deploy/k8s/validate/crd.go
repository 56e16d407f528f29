package validate

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// The vendored CRDs (schemas/README.md says where each comes from).
//
//go:embed schemas/*_*.yaml
var crdFiles embed.FS

// crdVersion is one served version of a CRD, ready to check objects with.
type crdVersion struct {
	structural *structuralschema.Structural
	openAPI    validation.SchemaValidator
	rules      *cel.Validator // nil when the schema has no x-kubernetes-validations
}

// crds reads the vendored CRDs once; a CRD that does not load is a
// programming error (the files are embedded), hence the panic.
var crds = sync.OnceValue(func() map[schema.GroupVersionKind]crdVersion {
	out := map[schema.GroupVersionKind]crdVersion{}
	err := fs.WalkDir(crdFiles, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := crdFiles.ReadFile(path)
		if err != nil {
			return err
		}
		return loadCRD(path, data, out)
	})
	if err != nil {
		panic(err)
	}
	return out
})

func loadCRD(path string, data []byte, out map[schema.GroupVersionKind]crdVersion) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(data, []byte("---\n")), &crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		var props apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &props, nil); err != nil {
			return fmt.Errorf("%s %s: %w", path, v.Name, err)
		}
		s, err := structuralschema.NewStructural(&props)
		if err != nil {
			return fmt.Errorf("%s %s: %w", path, v.Name, err)
		}
		openAPI, _, err := validation.NewSchemaValidator(&props)
		if err != nil {
			return fmt.Errorf("%s %s: %w", path, v.Name, err)
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		out[gvk] = crdVersion{structural: s, openAPI: openAPI, rules: cel.NewValidator(s, true, celconfig.PerCallLimit)}
	}
	return nil
}

// validate checks a custom resource as the API server does on create with
// field validation Strict: metadata as ObjectMeta, fields the schema does
// not have (which the server would prune) are errors, then defaults, the
// OpenAPI rules and the CEL rules.
func (c crdVersion) validate(js []byte) error {
	if err := strictMetadata(js); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return err
	}
	var errs []error
	pruned := runtime.DeepCopyJSON(obj)
	for _, p := range pruning.PruneWithOptions(pruned, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		errs = append(errs, fmt.Errorf("unknown field %q", p))
	}
	defaulting.Default(obj, c.structural)
	for _, e := range validation.ValidateCustomResource(nil, obj, c.openAPI) {
		errs = append(errs, e)
	}
	if c.rules != nil {
		ruleErrs, _ := c.rules.Validate(context.Background(), nil, c.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		for _, e := range ruleErrs {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// strictMetadata decodes only the object's metadata, strictly, into
// ObjectMeta: a CRD's schema says no more of it than "an object".
func strictMetadata(js []byte) error {
	var obj struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(js, &obj); err != nil {
		return err
	}
	var meta metav1.ObjectMeta
	return yaml.UnmarshalStrict(obj.Metadata, &meta)
}

package validate

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// builtin holds the Kubernetes API types the chart may render; an object
// of any other kind must have a vendored CRD, else it is an error.
var builtin = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		networkingv1.AddToScheme, autoscalingv2.AddToScheme, rbacv1.AddToScheme,
	} {
		utilruntime.Must(add(s))
	}
	return s
}()

// strict decodes as the API server does with field validation Strict:
// unknown and duplicate fields are errors, and so are values of the wrong
// type (a quantity that does not parse, a string for an integer).
var strict = serializer.NewCodecFactory(builtin, serializer.EnableStrict).UniversalDeserializer()

// CheckObject validates one object against its schema.
func CheckObject(o Object) error {
	gvk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
	if builtin.Recognizes(gvk) {
		if _, _, err := strict.Decode(o.JSON, &gvk, nil); err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
		return nil
	}
	crd, ok := crds()[gvk]
	if !ok {
		return fmt.Errorf("%s: no schema for %s (add its CRD to schemas/)", o, gvk)
	}
	if err := crd.validate(o.JSON); err != nil {
		return fmt.Errorf("%s: %w", o, err)
	}
	return nil
}

package validate

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sundial-run/sundial/pkg/event"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// UserSecret is the Secret the operator creates before installing the chart
// (docs/operations.md): the keyring and the SMTP credentials.
const UserSecret = "sundial"

// cnpgAppSecret is the suffix of the Secret CloudNativePG creates for a
// Cluster's application user, with its connection URI.
const cnpgAppSecret = "-app"

// CheckReferences checks what one object says of another, which no schema
// does: selectors select pods of the rendering, named ports exist on the
// containers they name, Secrets referred to will exist, and the dispatcher's
// ScaledObject scales the dispatcher on the dispatcher's consumer.
func CheckReferences(objs []Object) error {
	r, err := decodeRendering(objs)
	if err != nil {
		return err
	}
	errs := []error{r.checkWorkloads()}
	for _, o := range objs {
		var err error
		switch o.Kind {
		case "Service":
			err = r.checkService(o)
		case "PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			if err = json.Unmarshal(o.JSON, &p); err == nil && p.Spec.Selector != nil {
				err = r.selectsSome(p.Spec.Selector.MatchLabels)
			}
		case "NetworkPolicy":
			err = r.checkNetworkPolicy(o)
		case "ScaledObject":
			err = r.checkScaledObject(o)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o, err))
		}
	}
	return errors.Join(errs...)
}

// secretWillExist: rendered, created by CloudNativePG for a rendered
// Cluster, or the operator's own.
func (r rendering) secretWillExist(name string) bool {
	if r.secrets[name] || name == UserSecret {
		return true
	}
	for _, o := range r.objects {
		if o.Kind == "Cluster" && o.Name+cnpgAppSecret == name {
			return true
		}
	}
	return false
}

func (r rendering) checkWorkloads() error {
	var errs []error
	for _, w := range r.workloads {
		if w.kind == "Deployment" && !subset(w.selector, w.template.Labels) {
			errs = append(errs, fmt.Errorf("%s/%s: its selector does not select its own pods", w.kind, w.name))
		}
		for _, c := range w.template.Spec.Containers {
			for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
				if p != nil && p.HTTPGet != nil && !hasPort(c, p.HTTPGet.Port) {
					errs = append(errs, fmt.Errorf("%s/%s container %s: a probe's port %s is not one of its ports", w.kind, w.name, c.Name, p.HTTPGet.Port.String()))
				}
			}
			for _, e := range c.Env {
				if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && !r.secretWillExist(ref.SecretKeyRef.Name) {
					errs = append(errs, fmt.Errorf("%s/%s container %s: env %s: no Secret %s will exist", w.kind, w.name, c.Name, e.Name, ref.SecretKeyRef.Name))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (r rendering) checkService(o Object) error {
	var s corev1.Service
	if err := json.Unmarshal(o.JSON, &s); err != nil {
		return err
	}
	if err := r.selectsSome(s.Spec.Selector); err != nil {
		return err
	}
	for _, p := range s.Spec.Ports {
		if !r.someSelectedHasPort(s.Spec.Selector, p.TargetPort) {
			return fmt.Errorf("port %s: its pods have no port %s", p.Name, p.TargetPort.String())
		}
	}
	return nil
}

func (r rendering) checkNetworkPolicy(o Object) error {
	var np networkingv1.NetworkPolicy
	if err := json.Unmarshal(o.JSON, &np); err != nil {
		return err
	}
	sel := np.Spec.PodSelector.MatchLabels
	if err := r.selectsSome(sel); err != nil {
		return err
	}
	for _, in := range np.Spec.Ingress {
		for _, p := range in.Ports {
			if p.Port != nil && !r.someSelectedHasPort(sel, *p.Port) {
				return fmt.Errorf("ingress port %s: its pods have no such port", p.Port.String())
			}
		}
	}
	return nil
}

// scaledObject is the part of a KEDA ScaledObject checked here; its schema
// is checked against the CRD.
type scaledObject struct {
	Spec struct {
		ScaleTargetRef struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"scaleTargetRef"`
		Triggers []struct {
			Type     string            `json:"type"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

// checkScaledObject: the target is a rendered Deployment; a nats-jetstream
// trigger reads the consumer of the service that Deployment runs, on its
// stream (package event).
func (r rendering) checkScaledObject(o Object) error {
	var so scaledObject
	if err := json.Unmarshal(o.JSON, &so); err != nil {
		return err
	}
	ref := so.Spec.ScaleTargetRef
	var target *workload
	for i, w := range r.workloads {
		if w.kind == "Deployment" && w.name == ref.Name && (ref.Kind == "" || ref.Kind == "Deployment") {
			target = &r.workloads[i]
		}
	}
	if target == nil {
		return fmt.Errorf("scaleTargetRef: no Deployment %s in the rendering", ref.Name)
	}
	// Only the stream and the durable name are compared: the replicas do
	// not matter here.
	consumers := map[string]event.Consumer{
		"dispatcher": event.DispatcherConsumer(1),
		"scheduler":  event.SchedulerConsumer(1),
		"notifier":   event.NotifierConsumer(1),
	}
	var want event.Consumer
	ok := false
	for _, c := range target.template.Spec.Containers {
		if w, found := consumers[serviceOf(c.Command)]; found {
			want, ok = w, true
		}
	}
	for _, t := range so.Spec.Triggers {
		if t.Type != "nats-jetstream" {
			continue
		}
		if !ok || t.Metadata["stream"] != want.Stream || t.Metadata["consumer"] != want.Config.Durable {
			return fmt.Errorf("nats-jetstream trigger: stream %q, consumer %q: Deployment/%s reads stream %q with consumer %q",
				t.Metadata["stream"], t.Metadata["consumer"], ref.Name, want.Stream, want.Config.Durable)
		}
	}
	return nil
}

func (r rendering) selected(sel map[string]string) []workload {
	var out []workload
	for _, w := range r.workloads {
		if len(sel) > 0 && subset(sel, w.template.Labels) {
			out = append(out, w)
		}
	}
	return out
}

func (r rendering) selectsSome(sel map[string]string) error {
	if len(r.selected(sel)) == 0 {
		return fmt.Errorf("selector %v selects no pod of the rendering", sel)
	}
	return nil
}

// someSelectedHasPort: a pod sel selects has the port (not every pod a
// policy selects need have it).
func (r rendering) someSelectedHasPort(sel map[string]string, port intstr.IntOrString) bool {
	for _, w := range r.selected(sel) {
		for _, c := range w.template.Spec.Containers {
			if hasPort(c, port) {
				return true
			}
		}
	}
	return false
}

func hasPort(c corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return true
		}
	}
	return false
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

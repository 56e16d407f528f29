package validate

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// workload is a Deployment or a Job: a name and a pod template.
type workload struct {
	kind, name string
	selector   map[string]string // a Deployment's matchLabels; nil for a Job
	template   corev1.PodTemplateSpec
}

// rendering is what the cross-object checks need, decoded once.
type rendering struct {
	workloads  []workload
	configMaps map[string]map[string]string
	secrets    map[string]bool
	objects    []Object
}

func decodeRendering(objs []Object) (rendering, error) {
	r := rendering{configMaps: map[string]map[string]string{}, secrets: map[string]bool{}, objects: objs}
	for _, o := range objs {
		var err error
		switch o.Kind {
		case "Deployment":
			var d appsv1.Deployment
			err = json.Unmarshal(o.JSON, &d)
			var sel map[string]string
			if d.Spec.Selector != nil {
				sel = d.Spec.Selector.MatchLabels
			}
			r.workloads = append(r.workloads, workload{kind: o.Kind, name: o.Name, selector: sel, template: d.Spec.Template})
		case "Job":
			var j batchv1.Job
			err = json.Unmarshal(o.JSON, &j)
			r.workloads = append(r.workloads, workload{kind: o.Kind, name: o.Name, template: j.Spec.Template})
		case "ConfigMap":
			var c corev1.ConfigMap
			err = json.Unmarshal(o.JSON, &c)
			r.configMaps[o.Name] = c.Data
		case "Secret":
			r.secrets[o.Name] = true
		}
		if err != nil {
			return r, fmt.Errorf("%s: %w", o, err)
		}
	}
	return r, nil
}

// containerEnv is the environment a container gets: its env, with values
// from ConfigMaps looked up in the rendering and values from Secrets
// replaced by stand-ins, and its envFrom ConfigMaps.
func (r rendering) containerEnv(c corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			data, ok := r.configMaps[from.ConfigMapRef.Name]
			if !ok {
				return nil, fmt.Errorf("envFrom: no ConfigMap %s in the rendering", from.ConfigMapRef.Name)
			}
			for k, v := range data {
				env[from.Prefix+k] = v
			}
		default:
			// A Secret's keys are unknown here: its variables could not
			// be checked, so the chart names each one with secretKeyRef.
			return nil, fmt.Errorf("envFrom: only ConfigMaps (name each variable from a Secret with secretKeyRef)")
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = secretStandIn(e.Name)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			v, ok := r.configMaps[e.ValueFrom.ConfigMapKeyRef.Name][e.ValueFrom.ConfigMapKeyRef.Key]
			if !ok {
				return nil, fmt.Errorf("env %s: no key %s in a ConfigMap %s of the rendering", e.Name, e.ValueFrom.ConfigMapKeyRef.Key, e.ValueFrom.ConfigMapKeyRef.Name)
			}
			env[e.Name] = v
		default:
			env[e.Name] = "from-the-pod"
		}
	}
	return env, nil
}

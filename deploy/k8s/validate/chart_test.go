package validate_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/sundial-run/sundial/deploy/k8s/validate"
)

// The tests below render the chart with chosen values and read each kind
// of object it renders; every rendering must pass the checks as well.

var services = []string{"gateway", "scheduler", "dispatcher", "notifier"}

type rendering []validate.Object

// render renders the small shape, or the HA shape when ha, with set over
// it.
func render(t *testing.T, ha bool, set ...string) rendering {
	t.Helper()
	var files []string
	if ha {
		files = append(files, filepath.Join(chartDir, "values-ha.yaml"))
	}
	objs, _, err := validate.Render(chartDir, validate.Values{Files: files, Set: set})
	require.NoError(t, err)
	require.NoError(t, validate.Check(objs))
	return objs
}

func (r rendering) has(kind, name string) bool {
	return slices.ContainsFunc(r, func(o validate.Object) bool { return o.Kind == kind && o.Name == name })
}

func (r rendering) count(kind string) int {
	n := 0
	for _, o := range r {
		if o.Kind == kind {
			n++
		}
	}
	return n
}

// get decodes the object kind/name into out.
func (r rendering) get(t *testing.T, kind, name string, out any) {
	t.Helper()
	for _, o := range r {
		if o.Kind == kind && o.Name == name {
			require.NoError(t, json.Unmarshal(o.JSON, out))
			return
		}
	}
	t.Fatalf("no %s/%s in the rendering", kind, name)
}

func (r rendering) deployment(t *testing.T, service string) appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	r.get(t, "Deployment", "sundial-"+service, &d)
	return d
}

func (r rendering) configMap(t *testing.T, name string) corev1.ConfigMap {
	t.Helper()
	var c corev1.ConfigMap
	r.get(t, "ConfigMap", name, &c)
	return c
}

// unstructured decodes a custom resource.
func (r rendering) unstructured(t *testing.T, kind, name string) map[string]any {
	t.Helper()
	var m map[string]any
	r.get(t, kind, name, &m)
	return m
}

func field(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		require.True(t, ok, "%s is not a map", p)
		v = mm[p]
	}
	return v
}

func envNames(c corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		out = append(out, e.Name)
	}
	return out
}

func TestDeployments(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		ha       bool
		replicas map[string]*int32
	}{
		{"small", false, map[string]*int32{"gateway": ptr(1), "scheduler": ptr(1), "dispatcher": ptr(1), "notifier": ptr(1)}},
		// KEDA owns the dispatchers' count in HA.
		{"ha", true, map[string]*int32{"gateway": ptr(3), "scheduler": ptr(2), "dispatcher": nil, "notifier": ptr(2)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, c.ha)
			require.Equal(t, 4, r.count("Deployment"))
			for _, s := range services {
				d := r.deployment(t, s)
				pod := d.Spec.Template.Spec
				require.Equal(t, c.replicas[s], d.Spec.Replicas, s)
				require.Equal(t, map[string]string{"app.kubernetes.io/name": "sundial-" + s}, d.Spec.Selector.MatchLabels)
				require.Equal(t, "sundial", d.Spec.Template.Labels["app.kubernetes.io/part-of"])
				require.Equal(t, s, d.Spec.Template.Labels["app.kubernetes.io/component"])
				require.Equal(t, intstr.FromInt32(0), *d.Spec.Strategy.RollingUpdate.MaxUnavailable)

				// The restricted profile.
				require.True(t, *pod.SecurityContext.RunAsNonRoot)
				require.Equal(t, int64(65532), *pod.SecurityContext.RunAsUser)
				require.Equal(t, int64(65532), *pod.SecurityContext.RunAsGroup)
				require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
				require.False(t, *pod.AutomountServiceAccountToken)
				require.False(t, *pod.EnableServiceLinks)
				require.Len(t, pod.Containers, 1)
				for _, ctr := range slices.Concat(pod.InitContainers, pod.Containers) {
					require.False(t, *ctr.SecurityContext.AllowPrivilegeEscalation, ctr.Name)
					require.True(t, *ctr.SecurityContext.ReadOnlyRootFilesystem, ctr.Name)
					require.Equal(t, []corev1.Capability{"ALL"}, ctr.SecurityContext.Capabilities.Drop, ctr.Name)
					require.Equal(t, "sundial:0.1.0", ctr.Image, ctr.Name)
					require.NotNil(t, ctr.Resources.Limits.Memory(), ctr.Name)
				}

				// The migrate init container: gateway migrate, the database only.
				require.Len(t, pod.InitContainers, 1)
				migrate := pod.InitContainers[0]
				require.Equal(t, "migrate", migrate.Name)
				require.Equal(t, []string{"gateway", "migrate"}, migrate.Command)
				require.Equal(t, []string{"SUNDIAL_DATABASE_URL"}, envNames(migrate))
				require.Empty(t, migrate.EnvFrom)
				require.Equal(t, "sundial-db-app", migrate.Env[0].ValueFrom.SecretKeyRef.Name)
				require.Equal(t, "uri", migrate.Env[0].ValueFrom.SecretKeyRef.Key)

				// The service, its probes on the admin port.
				ctr := pod.Containers[0]
				require.Equal(t, []string{s}, ctr.Command)
				require.Equal(t, "sundial", ctr.EnvFrom[0].ConfigMapRef.Name)
				require.Equal(t, "/healthz", ctr.StartupProbe.HTTPGet.Path)
				require.Equal(t, "/healthz", ctr.LivenessProbe.HTTPGet.Path)
				require.Equal(t, "/readyz", ctr.ReadinessProbe.HTTPGet.Path)
				for _, p := range []*corev1.Probe{ctr.StartupProbe, ctr.LivenessProbe, ctr.ReadinessProbe} {
					require.Equal(t, intstr.FromString("admin"), p.HTTPGet.Port)
				}
				require.Contains(t, ctr.Ports, corev1.ContainerPort{Name: "admin", ContainerPort: 9090, Protocol: corev1.ProtocolTCP})
				require.Equal(t, []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}, ctr.VolumeMounts)

				require.Len(t, d.Spec.Template.Annotations["checksum/config"], 64)
				require.Equal(t, c.ha, len(pod.TopologySpreadConstraints) == 1, "topology spread in HA only")
			}
		})
	}
}

func TestDeploymentEnvironment(t *testing.T) {
	t.Parallel()
	r := render(t, true)
	require.Equal(t, []string{"SUNDIAL_DATABASE_URL", "SUNDIAL_SECRET_KEYS"}, envNames(r.deployment(t, "gateway").Spec.Template.Spec.Containers[0]))
	require.Equal(t, []string{"SUNDIAL_DATABASE_URL"}, envNames(r.deployment(t, "scheduler").Spec.Template.Spec.Containers[0]))
	dispatcher := r.deployment(t, "dispatcher").Spec.Template.Spec.Containers[0]
	require.Equal(t, []string{"SUNDIAL_DATABASE_URL", "SUNDIAL_SECRET_KEYS", "SUNDIAL_DATABASE_MAX_CONNS"}, envNames(dispatcher))
	require.Equal(t, "4", dispatcher.Env[2].Value)
	notifier := r.deployment(t, "notifier").Spec.Template.Spec.Containers[0]
	require.Equal(t, []string{"SUNDIAL_DATABASE_URL", "SUNDIAL_SECRET_KEYS", "SUNDIAL_NOTIFIER_SMTP_USERNAME", "SUNDIAL_NOTIFIER_SMTP_PASSWORD"}, envNames(notifier))
	require.True(t, *notifier.Env[2].ValueFrom.SecretKeyRef.Optional)
	gateway := r.deployment(t, "gateway").Spec.Template.Spec.Containers[0]
	require.Equal(t, "sundial", gateway.Env[1].ValueFrom.SecretKeyRef.Name)
	require.Equal(t, "secret-keys", gateway.Env[1].ValueFrom.SecretKeyRef.Key)
	require.Equal(t, int64(5), gateway.Lifecycle.PreStop.Sleep.Seconds)

	image := render(t, false, "image.repository=registry.example.com/sundial", "image.tag=1.4.0")
	require.Equal(t, "registry.example.com/sundial:1.4.0", image.deployment(t, "notifier").Spec.Template.Spec.InitContainers[0].Image)
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	pinned := render(t, false, "image.repository=registry.example.com/sundial", "image.tag=1.4.0", "image.digest="+digest)
	require.Equal(t, "registry.example.com/sundial@"+digest, pinned.deployment(t, "gateway").Spec.Template.Spec.Containers[0].Image)
}

// A change of the settings changes every pod template's checksum (a
// rollout); the same settings give the same checksum.
func TestChecksumFollowsTheConfigMap(t *testing.T) {
	t.Parallel()
	sum := func(r rendering, s string) string {
		return r.deployment(t, s).Spec.Template.Annotations["checksum/config"]
	}
	a, b, changed := render(t, false), render(t, false), render(t, false, "config.logLevel=debug")
	for _, s := range services {
		require.Equal(t, sum(a, s), sum(b, s))
		require.NotEqual(t, sum(a, s), sum(changed, s))
	}
}

func TestServices(t *testing.T) {
	t.Parallel()
	r := render(t, false)
	require.Equal(t, 4, r.count("Service"))
	for _, s := range services {
		var svc corev1.Service
		r.get(t, "Service", "sundial-"+s, &svc)
		require.Equal(t, map[string]string{"app.kubernetes.io/name": "sundial-" + s}, svc.Spec.Selector)
		admin := corev1.ServicePort{Name: "admin", Port: 9090, TargetPort: intstr.FromString("admin"), Protocol: corev1.ProtocolTCP}
		if s == "gateway" {
			http := corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}
			require.Equal(t, []corev1.ServicePort{http, admin}, svc.Spec.Ports)
		} else {
			require.Equal(t, []corev1.ServicePort{admin}, svc.Spec.Ports)
		}
	}
}

func TestPodDisruptionBudgets(t *testing.T) {
	t.Parallel()
	r := render(t, true)
	require.Equal(t, 4, r.count("PodDisruptionBudget"))
	for _, s := range services {
		var p policyv1.PodDisruptionBudget
		r.get(t, "PodDisruptionBudget", "sundial-"+s, &p)
		require.Equal(t, intstr.FromInt32(1), *p.Spec.MaxUnavailable)
		require.Equal(t, map[string]string{"app.kubernetes.io/name": "sundial-" + s}, p.Spec.Selector.MatchLabels)
	}
	require.Zero(t, render(t, false, "podDisruptionBudget.enabled=false").count("PodDisruptionBudget"))
}

// egressPorts lists a policy's egress rules as "PORT/PROTOCOL ..." each.
func egressPorts(np networkingv1.NetworkPolicy) []string {
	var out []string
	for _, e := range np.Spec.Egress {
		var ports []string
		for _, p := range e.Ports {
			ports = append(ports, fmt.Sprintf("%s/%s", p.Port.String(), *p.Protocol))
		}
		out = append(out, strings.Join(ports, " "))
	}
	return out
}

func TestNetworkPolicies(t *testing.T) {
	t.Parallel()
	policy := func(r rendering, name string) networkingv1.NetworkPolicy {
		var np networkingv1.NetworkPolicy
		r.get(t, "NetworkPolicy", name, &np)
		return np
	}
	r := render(t, false)
	require.Equal(t, 4, r.count("NetworkPolicy"))
	base := policy(r, "sundial-base")
	require.Equal(t, map[string]string{"app.kubernetes.io/part-of": "sundial"}, base.Spec.PodSelector.MatchLabels)
	require.Equal(t, []string{"53/UDP 53/TCP", "5432/TCP", "4222/TCP"}, egressPorts(base))
	require.Equal(t, "sundial-db", base.Spec.Egress[1].To[0].PodSelector.MatchLabels["cnpg.io/cluster"])
	require.Equal(t, "monitoring", base.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"])
	require.Equal(t, intstr.FromString("admin"), *base.Spec.Ingress[0].Ports[0].Port)
	require.Equal(t, intstr.FromString("http"), *policy(r, "sundial-gateway").Spec.Ingress[0].Ports[0].Port)
	dispatcher := policy(r, "sundial-dispatcher")
	require.Equal(t, []string{"443/TCP"}, egressPorts(dispatcher))
	require.Equal(t, "0.0.0.0/0", dispatcher.Spec.Egress[0].To[0].IPBlock.CIDR)
	require.Contains(t, dispatcher.Spec.Egress[0].To[0].IPBlock.Except, "10.0.0.0/8")
	require.Equal(t, []string{"443/TCP 587/TCP 465/TCP"}, egressPorts(policy(r, "sundial-notifier")))

	// The OTLP collector: its port, from the URL or the scheme's.
	cases := []struct{ endpoint, port string }{
		{"http://otel-collector.monitoring:4318", "4318/TCP"},
		{"https://otlp.example.com", "443/TCP"},
		{"http://otel-collector.monitoring", "4318/TCP"},
		{"http://[fd00::1]:4317", "4317/TCP"},
		{"https://[fd00::1]", "443/TCP"},
	}
	for _, c := range cases {
		otlp := render(t, false, "telemetry.otlpEndpoint="+c.endpoint,
			"telemetry.otlpPeers[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring")
		base := policy(otlp, "sundial-base")
		require.Equal(t, []string{"53/UDP 53/TCP", "5432/TCP", "4222/TCP", c.port}, egressPorts(base), c.endpoint)
		require.Equal(t, "monitoring", base.Spec.Egress[3].To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"])
		require.Equal(t, c.endpoint, otlp.configMap(t, "sundial").Data["OTEL_EXPORTER_OTLP_ENDPOINT"])
	}

	// PostgreSQL of one's own: its peers and port.
	ext := render(t, false, "postgresql.cnpg.enabled=false", "postgresql.external.peers[0].ipBlock.cidr=10.20.0.0/24", "postgresql.external.port=6432")
	base = policy(ext, "sundial-base")
	require.Equal(t, []string{"53/UDP 53/TCP", "6432/TCP", "4222/TCP"}, egressPorts(base))
	require.Equal(t, "10.20.0.0/24", base.Spec.Egress[1].To[0].IPBlock.CIDR)

	require.Zero(t, render(t, false, "networkPolicy.enabled=false").count("NetworkPolicy"))
}

func TestConfigMap(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"SUNDIAL_NATS_URL":                "nats://nats:4222",
		"SUNDIAL_LOG_LEVEL":               "info",
		"SUNDIAL_HEADER_PREFIX":           "Sundial",
		"SUNDIAL_PUBLIC_URL":              "https://sundial.example.com",
		"SUNDIAL_GATEWAY_ADMIN_ADDR":      ":9090",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":    ":9090",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR":   ":9090",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":     ":9090",
		"SUNDIAL_STREAM_REPLICAS":         "1",
		"SUNDIAL_GATEWAY_TRUSTED_PROXIES": "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7",
		"SUNDIAL_NOTIFIER_SMTP_HOST":      "smtp.example.com",
		"SUNDIAL_NOTIFIER_SMTP_PORT":      "587",
		"SUNDIAL_NOTIFIER_SMTP_TLS":       "starttls",
		"SUNDIAL_NOTIFIER_SMTP_FROM":      "sundial@example.com",
	}
	require.Equal(t, want, render(t, false).configMap(t, "sundial").Data)
	require.Equal(t, "3", render(t, true).configMap(t, "sundial").Data["SUNDIAL_STREAM_REPLICAS"])

	set := render(t, false,
		"config.publicURL=https://hooks.example.org",
		"config.natsURL=nats://nats.queue:4222",
		"config.logLevel=debug",
		"config.trustedProxies={10.1.0.0/16}",
		"config.smtp.host=mail.example.org",
		"config.smtp.port=465",
		"config.smtp.tls=tls",
		"config.smtp.from=hooks@example.org",
		"config.extra.SUNDIAL_DELIVERY_ALLOW_CIDRS=10.2.0.0/16",
	).configMap(t, "sundial").Data
	require.Equal(t, "https://hooks.example.org", set["SUNDIAL_PUBLIC_URL"])
	require.Equal(t, "nats://nats.queue:4222", set["SUNDIAL_NATS_URL"])
	require.Equal(t, "debug", set["SUNDIAL_LOG_LEVEL"])
	require.Equal(t, "10.1.0.0/16", set["SUNDIAL_GATEWAY_TRUSTED_PROXIES"])
	require.Equal(t, "mail.example.org", set["SUNDIAL_NOTIFIER_SMTP_HOST"])
	require.Equal(t, "465", set["SUNDIAL_NOTIFIER_SMTP_PORT"])
	require.Equal(t, "tls", set["SUNDIAL_NOTIFIER_SMTP_TLS"])
	require.Equal(t, "hooks@example.org", set["SUNDIAL_NOTIFIER_SMTP_FROM"])
	require.Equal(t, "10.2.0.0/16", set["SUNDIAL_DELIVERY_ALLOW_CIDRS"])
}

func TestCNPGCluster(t *testing.T) {
	t.Parallel()
	small := render(t, false).unstructured(t, "Cluster", "sundial-db")
	require.EqualValues(t, 1, field(t, small, "spec", "instances"))
	require.Equal(t, false, field(t, small, "spec", "enablePDB"), "one instance must not block node drains")
	require.Nil(t, field(t, small, "spec", "backup"))
	require.Equal(t, "10Gi", field(t, small, "spec", "storage", "size"))

	ha := render(t, true).unstructured(t, "Cluster", "sundial-db")
	require.EqualValues(t, 3, field(t, ha, "spec", "instances"))
	require.Nil(t, field(t, ha, "spec", "enablePDB"), "the operator's budget with standbys")
	require.Equal(t, "200", field(t, ha, "spec", "postgresql", "parameters", "max_connections"))
	require.Equal(t, map[string]any{"method": "any", "number": float64(1)}, field(t, ha, "spec", "postgresql", "synchronous"))

	barman := render(t, true, "postgresql.cnpg.backup.enabled=true",
		"postgresql.cnpg.backup.barmanObjectStore.destinationPath=s3://backups/sundial",
		"postgresql.cnpg.backup.barmanObjectStore.endpointURL=https://s3.example.com",
		"postgresql.cnpg.backup.retentionPolicy=14d",
	).unstructured(t, "Cluster", "sundial-db")
	require.Equal(t, "14d", field(t, barman, "spec", "backup", "retentionPolicy"))
	require.Equal(t, "s3://backups/sundial", field(t, barman, "spec", "backup", "barmanObjectStore", "destinationPath"))
	require.Equal(t, "https://s3.example.com", field(t, barman, "spec", "backup", "barmanObjectStore", "endpointURL"))
	require.Equal(t, map[string]any{"name": "sundial-backup", "key": "ACCESS_KEY_ID"}, field(t, barman, "spec", "backup", "barmanObjectStore", "s3Credentials", "accessKeyId"))
	require.Equal(t, map[string]any{"name": "sundial-backup", "key": "ACCESS_SECRET_KEY"}, field(t, barman, "spec", "backup", "barmanObjectStore", "s3Credentials", "secretAccessKey"))
	require.Nil(t, field(t, barman, "spec", "backup", "volumeSnapshot"))

	snapshot := render(t, false, "postgresql.cnpg.backup.enabled=true", "postgresql.cnpg.backup.method=volumeSnapshot",
		"postgresql.cnpg.backup.volumeSnapshot.className=csi-snapclass").unstructured(t, "Cluster", "sundial-db")
	require.Equal(t, map[string]any{"className": "csi-snapclass", "online": false}, field(t, snapshot, "spec", "backup", "volumeSnapshot"))
	require.Nil(t, field(t, snapshot, "spec", "backup", "barmanObjectStore"))
	require.Equal(t, false, field(t, snapshot, "spec", "enablePDB"))

	// PostgreSQL of one's own: no Cluster, the URL from the Secret's key.
	ext := render(t, false, "postgresql.cnpg.enabled=false")
	require.Zero(t, ext.count("Cluster"))
	for _, s := range services {
		pod := ext.deployment(t, s).Spec.Template.Spec
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			require.Equal(t, &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sundial"}, Key: "database-url"},
				c.Env[0].ValueFrom.SecretKeyRef, c.Name)
		}
	}
}

func TestScheduledBackup(t *testing.T) {
	t.Parallel()
	require.Zero(t, render(t, false).count("ScheduledBackup"))
	cases := []struct {
		method string
		set    []string
	}{
		{"barmanObjectStore", []string{"postgresql.cnpg.backup.barmanObjectStore.destinationPath=s3://backups/sundial"}},
		{"volumeSnapshot", []string{"postgresql.cnpg.backup.method=volumeSnapshot", "postgresql.cnpg.backup.volumeSnapshot.className=csi-snapclass"}},
	}
	for _, c := range cases {
		t.Run(c.method, func(t *testing.T) {
			t.Parallel()
			set := append([]string{"postgresql.cnpg.backup.enabled=true", "postgresql.cnpg.backup.schedule=0 30 2 * * 0"}, c.set...)
			b := render(t, false, set...).unstructured(t, "ScheduledBackup", "sundial-db")
			require.Equal(t, "0 30 2 * * 0", field(t, b, "spec", "schedule"))
			require.Equal(t, c.method, field(t, b, "spec", "method"))
			require.Equal(t, "sundial-db", field(t, b, "spec", "cluster", "name"))
			require.Equal(t, "self", field(t, b, "spec", "backupOwnerReference"))
		})
	}
}

func TestScaledObject(t *testing.T) {
	t.Parallel()
	require.Zero(t, render(t, false).count("ScaledObject"))
	so := render(t, true).unstructured(t, "ScaledObject", "sundial-dispatcher")
	require.Equal(t, "sundial-dispatcher", field(t, so, "spec", "scaleTargetRef", "name"))
	require.EqualValues(t, 2, field(t, so, "spec", "minReplicaCount"))
	require.EqualValues(t, 20, field(t, so, "spec", "maxReplicaCount"))
	trigger := field(t, so, "spec", "triggers").([]any)[0].(map[string]any)
	require.Equal(t, "nats-jetstream", trigger["type"])
	require.Equal(t, map[string]any{
		"natsServerMonitoringEndpoint": "nats-headless.sundial.svc.cluster.local:8222",
		"account":                      "$G",
		"stream":                       "SUNDIAL_DUE",
		"consumer":                     "dispatcher",
		"lagThreshold":                 "20",
		"activationLagThreshold":       "0",
	}, trigger["metadata"])
}

func TestPodMonitor(t *testing.T) {
	t.Parallel()
	require.Zero(t, render(t, false).count("PodMonitor"))
	r := render(t, false, "monitoring.podMonitor.enabled=true", "monitoring.podMonitor.labels.release=prometheus")
	pm := r.unstructured(t, "PodMonitor", "sundial")
	require.Equal(t, "prometheus", field(t, pm, "metadata", "labels", "release"))
	require.Equal(t, []any{map[string]any{"port": "admin", "path": "/metrics", "interval": "30s"}}, field(t, pm, "spec", "podMetricsEndpoints"))
	// The job label is the value of the pods' label jobLabel names: it
	// must be "sundial", as the alerts' up{job="sundial"}.
	jobLabel := field(t, pm, "spec", "jobLabel").(string)
	selector := field(t, pm, "spec", "selector", "matchLabels").(map[string]any)
	for _, s := range services {
		labels := r.deployment(t, s).Spec.Template.Labels
		require.Equal(t, "sundial", labels[jobLabel], s)
		for k, v := range selector {
			require.Equal(t, v, labels[k], "the PodMonitor selects the %s pods", s)
		}
	}
}

// The PrometheusRule carries every group and rule of files/alerts.yaml
// unchanged, Prometheus's own {{ $value }} templates included.
func TestPrometheusRule(t *testing.T) {
	t.Parallel()
	require.Zero(t, render(t, false).count("PrometheusRule"))
	raw, err := os.ReadFile(filepath.Join(chartDir, "files", "alerts.yaml"))
	require.NoError(t, err)
	var file map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &file))
	require.Contains(t, string(raw), "{{ $value")

	rule := render(t, false, "monitoring.prometheusRule.enabled=true").unstructured(t, "PrometheusRule", "sundial")
	require.Equal(t, file["groups"], field(t, rule, "spec", "groups"))
	js, err := json.Marshal(rule)
	require.NoError(t, err)
	require.Contains(t, string(js), "{{ $value")
	var alerts []string
	for _, g := range file["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			alerts = append(alerts, r.(map[string]any)["alert"].(string))
		}
	}
	require.Contains(t, alerts, "SundialDown")
}

func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	require.False(t, render(t, false).has("ConfigMap", "sundial-dashboard"))
	raw, err := os.ReadFile(filepath.Join(chartDir, "files", "grafana-dashboard.json"))
	require.NoError(t, err)

	cm := render(t, false, "monitoring.grafanaDashboard.enabled=true").configMap(t, "sundial-dashboard")
	require.Equal(t, "1", cm.Labels["grafana_dashboard"])
	require.Equal(t, string(raw), cm.Data["sundial.json"])
	require.True(t, json.Valid([]byte(cm.Data["sundial.json"])))

	other := render(t, false, "monitoring.grafanaDashboard.enabled=true", "monitoring.grafanaDashboard.labelName=dashboards",
		"monitoring.grafanaDashboard.labelValue=sundial", "monitoring.grafanaDashboard.namespace=monitoring").configMap(t, "sundial-dashboard")
	require.Equal(t, "sundial", other.Labels["dashboards"])
	require.NotContains(t, other.Labels, "grafana_dashboard")
	require.Equal(t, "monitoring", other.Namespace)
}

func ptr(n int32) *int32 { return &n }

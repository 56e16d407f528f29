package validate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/yaml"

	"github.com/sundial-run/sundial/deploy/k8s/validate"
)

// root is the repository's root, from this package's directory.
const root = "../../.."

// chartDir is outside this module, whose files alone go test's cache
// compares: after editing only the chart, run the tests with -count=1.
var chartDir = filepath.Join(root, validate.ChartDir)

func TestRepositoryFilesValid(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	require.NoError(t, validate.All(root, out))
	for _, s := range validate.Shapes {
		rendered, err := os.ReadFile(filepath.Join(out, s.Name+".yaml"))
		require.NoError(t, err)
		require.Contains(t, string(rendered), "kind: Deployment")
	}
}

// patched renders the HA shape with set, then applies a JSON patch (YAML
// ops) to the object kind/name when kind is not empty.
func patched(t *testing.T, set []string, kind, name, ops string) []validate.Object {
	t.Helper()
	objs, _, err := validate.Render(chartDir, validate.Values{Files: []string{filepath.Join(chartDir, "values-ha.yaml")}, Set: set})
	require.NoError(t, err)
	if kind == "" {
		return objs
	}
	js, err := yaml.YAMLToJSON([]byte(ops))
	require.NoError(t, err)
	patch, err := jsonpatch.DecodePatch(js)
	require.NoError(t, err)
	for i, o := range objs {
		if o.Kind == kind && o.Name == name {
			objs[i].JSON, err = patch.Apply(o.JSON)
			require.NoError(t, err)
			return objs
		}
	}
	t.Fatalf("no %s/%s in the rendering", kind, name)
	return nil
}

// Each broken rendering must fail, with a message naming what is wrong: a
// check that passes everything would fail here.
func TestBrokenRenderingsFail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name             string
		set              []string
		kind, obj, patch string
		want             string
	}{
		{"unknown field in a Deployment", nil,
			"Deployment", "sundial-gateway", "- op: add\n  path: /spec/template/spec/containers/0/imagePullPolicyy\n  value: Always",
			`unknown field "spec.template.spec.containers[0].imagePullPolicyy"`},
		{"memory that is not a quantity", []string{"notifier.resources.limits.memory=64MB"}, "", "", "",
			"quantities must match"},
		{"unknown field in a NetworkPolicy", nil,
			"NetworkPolicy", "sundial-dispatcher", "- op: add\n  path: /spec/egress/0/toPorts\n  value: []",
			`unknown field "spec.egress[0].toPorts"`},
		{"unknown field in the ScaledObject (its CRD)", nil,
			"ScaledObject", "sundial-dispatcher", "- op: add\n  path: /spec/minReplicas\n  value: 2",
			`unknown field "spec.minReplicas"`},
		{"ScaledObject breaking its CRD's CEL rule", []string{"dispatcher.autoscaling.minReplicas=30"}, "", "", "",
			"minReplicaCount must be less than or equal to maxReplicaCount"},
		{"Cluster below its CRD's minimum", []string{"postgresql.cnpg.instances=0"}, "", "", "",
			"spec.instances: Invalid value: 0"},
		{"unknown field in the Cluster's metadata", nil,
			"Cluster", "sundial-db", "- op: add\n  path: /metadata/label\n  value: {}",
			`unknown field "label"`},
		{"a retention policy the Cluster's CRD refuses", []string{"postgresql.cnpg.backup.enabled=true", "postgresql.cnpg.backup.barmanObjectStore.destinationPath=s3://b/s", "postgresql.cnpg.backup.retentionPolicy=30 days"}, "", "", "",
			"spec.backup.retentionPolicy"},
		{"unknown field in the ScheduledBackup (its CRD)", []string{"postgresql.cnpg.backup.enabled=true", "postgresql.cnpg.backup.barmanObjectStore.destinationPath=s3://b/s"},
			"ScheduledBackup", "sundial-db", "- op: add\n  path: /spec/scheduleTime\n  value: x",
			`unknown field "spec.scheduleTime"`},
		{"unknown field in the PodMonitor (its CRD)", []string{"monitoring.podMonitor.enabled=true"},
			"PodMonitor", "sundial", "- op: add\n  path: /spec/podMetricsEndpoints/0/targetPorts\n  value: admin",
			`unknown field "spec.podMetricsEndpoints[0].targetPorts"`},
		{"a PrometheusRule without rules", []string{"monitoring.prometheusRule.enabled=true"},
			"PrometheusRule", "sundial", "- op: remove\n  path: /spec/groups/0/rules/0/expr",
			"spec.groups[0].rules[0].expr: Required value"},
		{"ScaledObject on another consumer", nil,
			"ScaledObject", "sundial-dispatcher", "- op: replace\n  path: /spec/triggers/0/metadata/consumer\n  value: scheduler",
			`Deployment/sundial-dispatcher reads stream "SUNDIAL_DUE" with consumer "dispatcher"`},
		{"dispatcher without its keyring", nil,
			"Deployment", "sundial-dispatcher", "- op: remove\n  path: /spec/template/spec/containers/0/env/1",
			"dispatcher rejects its environment: SUNDIAL_SECRET_KEYS"},
		{"keyring from a Secret nothing creates", []string{"existingSecret=sundial-keys"}, "", "", "",
			"env SUNDIAL_SECRET_KEYS: no Secret sundial-keys will exist"},
		{"public URL left out", nil,
			"ConfigMap", "sundial", "- op: remove\n  path: /data/SUNDIAL_PUBLIC_URL",
			"notifier reads SUNDIAL_PUBLIC_URL, which is not set"},
		{"a variable no service reads", []string{"config.extra.SUNDIAL_NOTIFER_SMTP_HOST=smtp.example.com"}, "", "", "",
			"SUNDIAL_NOTIFER_SMTP_HOST is read by no Sundial service"},
		{"a value the service refuses", []string{"config.publicURL=sundial.example.com"}, "", "", "",
			`SUNDIAL_PUBLIC_URL="sundial.example.com": want an absolute http or https URL`},
		{"a probe on a port the container lacks", nil,
			"Deployment", "sundial-scheduler", "- op: replace\n  path: /spec/template/spec/containers/0/ports/0/name\n  value: metrics",
			"a probe's port admin is not one of its ports"},
		{"a Service selecting nothing", nil,
			"Service", "sundial-gateway", "- op: replace\n  path: /spec/selector\n  value: {app.kubernetes.io/name: gateway}",
			"selects no pod of the rendering"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := validate.Check(patched(t, c.set, c.kind, c.obj, c.patch))
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
	t.Run("an object of a kind without a schema", func(t *testing.T) {
		t.Parallel()
		objs := append(patched(t, nil, "", "", ""), validate.Object{APIVersion: "monitoring.coreos.com/v1", Kind: "Probe", Name: "sundial",
			JSON: []byte(`{"apiVersion":"monitoring.coreos.com/v1","kind":"Probe","metadata":{"name":"sundial"},"spec":{}}`)})
		err := validate.Check(objs)
		require.Error(t, err)
		require.Contains(t, err.Error(), "no schema for monitoring.coreos.com/v1, Kind=Probe")
	})
}

// Values the templates refuse stop the rendering, naming the value.
func TestRequiredValuesFail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		set  []string
		want string
	}{
		{"no public URL", []string{"config.publicURL="}, "config.publicURL is required"},
		{"no SMTP host", []string{"config.smtp.host="}, "config.smtp.host is required"},
		{"an object store backup without its path", []string{"postgresql.cnpg.backup.enabled=true"}, "barmanObjectStore.destinationPath is required"},
		{"a snapshot backup without its class", []string{"postgresql.cnpg.backup.enabled=true", "postgresql.cnpg.backup.method=volumeSnapshot"}, "volumeSnapshot.className is required"},
		{"a value the templates do not know of", []string{"gateway.resources=null"}, "resources"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := validate.Render(chartDir, validate.Values{Set: c.set})
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

// helm lint's rules run on the chart: a Chart.yaml it refuses fails.
func TestLintFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(chartDir)))
	chartYAML := filepath.Join(dir, "Chart.yaml")
	data, err := os.ReadFile(chartYAML)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(chartYAML, []byte(strings.Replace(string(data), "version: 0.1.0", "version: one", 1)), 0o644))
	err = validate.Lint(dir, validate.Values{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "version")
}

func TestBrokenNATSValuesFail(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, values, want string }{
		{"unknown key", "config:\n  jetstream:\n    enabled: true\n    fileStorage: {}\n", "config.jetstream.fileStorage: the NATS chart has no such value"},
		{"map for a value", "config:\n  cluster:\n    replicas: {count: 3}\n", "config.cluster.replicas: want a value that is not a map"},
		{"duplicate key", "config:\n  cluster: {}\n  cluster: {}\n", "already set in map"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "values.yaml")
			require.NoError(t, os.WriteFile(path, []byte(c.values), 0o644))
			err := validate.CheckNATSValues(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
	for _, s := range validate.Shapes {
		if s.NATSValues != "" {
			require.NoError(t, validate.CheckNATSValues(filepath.Join(root, s.NATSValues)))
		}
	}
}

// The repository's docker-compose.yml with one edit must fail.
func TestBrokenComposeFails(t *testing.T) {
	t.Parallel()
	original, err := os.ReadFile(filepath.Join(root, validate.ComposeFile))
	require.NoError(t, err)
	cases := []struct{ name, old, new, want string }{
		{"notifier without SMTP host",
			"      SUNDIAL_NOTIFIER_SMTP_HOST: ${SUNDIAL_NOTIFIER_SMTP_HOST:-mailpit}\n", "",
			"notifier reads SUNDIAL_NOTIFIER_SMTP_HOST, which is not set"},
		{"no public URL",
			"  SUNDIAL_PUBLIC_URL: ${SUNDIAL_PUBLIC_URL:-http://localhost:${SUNDIAL_HTTP_PORT:-8080}}\n", "",
			"service dispatcher: dispatcher reads SUNDIAL_PUBLIC_URL, which is not set"},
		{"no NATS URL",
			"  SUNDIAL_NATS_URL: nats://nats:4222\n", "",
			"scheduler reads SUNDIAL_NATS_URL, which is not set"},
		{"a key the Compose schema lacks",
			"  stop_grace_period: 30s\n", "  stop_grace_periods: 30s\n",
			"stop_grace_periods"},
		{"the scheduler gone",
			`command: ["scheduler"]`, `command: ["sleep"]`,
			"no service runs scheduler"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, string(original), c.old)
			path := filepath.Join(t.TempDir(), validate.ComposeFile)
			require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(original), c.old, c.new, 1)), 0o644))
			err := validate.CheckCompose(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

// values.schema.json refuses a value the chart does not have, and one of
// the wrong type, in the rendering and in helm lint.
func TestValuesSchemaRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, set, want string }{
		{"a misspelt value", "config.publicUrl=https://sundial.example.com", "publicUrl"},
		{"a misspelt nested value", "postgresql.cnpg.backup.barmanObjectstore.destinationPath=s3://b/s", "barmanObjectstore"},
		{"a list for a number", "gateway.replicas={1}", "replicas"},
		{"an unknown backup method", "postgresql.cnpg.backup.method=pgdump", "method"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			vals := validate.Values{Set: []string{c.set}}
			_, _, err := validate.Render(chartDir, vals)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
			err = validate.Lint(chartDir, vals)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

package validate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/deploy/k8s/validate"
)

// root is the repository's root, from this package's directory.
const root = "../../.."

func TestRepositoryFilesValid(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	require.NoError(t, validate.All(root, out))
	names, err := validate.Overlays(filepath.Join(root, validate.K8sDir))
	require.NoError(t, err)
	require.Equal(t, []string{"base", "ha", "small"}, names)
	for _, name := range names {
		rendered, err := os.ReadFile(filepath.Join(out, name+".yaml"))
		require.NoError(t, err)
		require.Contains(t, string(rendered), "kind: Deployment")
	}
}

// overlay copies the repository's base and ha overlay to a temporary
// directory (kustomize takes no absolute resource paths), adds an overlay
// over ha with the given kustomization fields, and returns its directory.
func overlay(t *testing.T, fields string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"base", "ha"} {
		require.NoError(t, os.CopyFS(filepath.Join(dir, name), os.DirFS(filepath.Join(root, validate.K8sDir, name))))
	}
	broken := filepath.Join(dir, "broken")
	require.NoError(t, os.Mkdir(broken, 0o755))
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + fields
	if !strings.Contains(fields, "resources:") {
		k += "resources:\n  - ../ha\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(broken, "kustomization.yaml"), []byte(k), 0o644))
	return broken
}

// Each broken overlay must fail, with a message naming what is wrong: a
// check that passes everything would fail here.
func TestBrokenOverlaysFail(t *testing.T) {
	t.Parallel()
	jsonPatch := func(kind, name, ops string) string {
		return "patches:\n  - target:\n      kind: " + kind + "\n      name: " + name + "\n    patch: |-\n" + indent(ops, "      ")
	}
	cases := []struct {
		name, patch, want string
	}{
		{"unknown field in a Deployment",
			jsonPatch("Deployment", "sundial-gateway", "- op: add\n  path: /spec/template/spec/containers/0/imagePullPolicyy\n  value: Always"),
			`unknown field "spec.template.spec.containers[0].imagePullPolicyy"`},
		{"memory that is not a quantity",
			jsonPatch("Deployment", "sundial-notifier", "- op: replace\n  path: /spec/template/spec/containers/0/resources/limits/memory\n  value: 64MB"),
			"quantities must match"},
		{"unknown field in a NetworkPolicy",
			jsonPatch("NetworkPolicy", "sundial-dispatcher", "- op: add\n  path: /spec/egress/0/toPorts\n  value: []"),
			`unknown field "spec.egress[0].toPorts"`},
		{"unknown field in the ScaledObject (its CRD)",
			jsonPatch("ScaledObject", "sundial-dispatcher", "- op: add\n  path: /spec/minReplicas\n  value: 2"),
			`unknown field "spec.minReplicas"`},
		{"ScaledObject breaking its CRD's CEL rule",
			jsonPatch("ScaledObject", "sundial-dispatcher", "- op: replace\n  path: /spec/minReplicaCount\n  value: 30"),
			"minReplicaCount must be less than or equal to maxReplicaCount"},
		{"Cluster below its CRD's minimum",
			jsonPatch("Cluster", "sundial-db", "- op: replace\n  path: /spec/instances\n  value: 0"),
			"spec.instances: Invalid value: 0"},
		{"unknown field in the Cluster's metadata",
			jsonPatch("Cluster", "sundial-db", "- op: add\n  path: /metadata/label\n  value: {}"),
			`unknown field "label"`},
		{"ScaledObject on another consumer",
			jsonPatch("ScaledObject", "sundial-dispatcher", "- op: replace\n  path: /spec/triggers/0/metadata/consumer\n  value: scheduler"),
			`Deployment/sundial-dispatcher reads stream "SUNDIAL_DUE" with consumer "dispatcher"`},
		{"dispatcher without its keyring",
			jsonPatch("Deployment", "sundial-dispatcher", "- op: remove\n  path: /spec/template/spec/containers/0/env/1"),
			"dispatcher rejects its environment: SUNDIAL_SECRET_KEYS"},
		{"keyring from a Secret nothing creates",
			jsonPatch("Deployment", "sundial-notifier", "- op: replace\n  path: /spec/template/spec/containers/0/env/1/valueFrom/secretKeyRef/name\n  value: sundial-keys"),
			"env SUNDIAL_SECRET_KEYS: no Secret sundial-keys will exist"},
		{"public URL left out",
			"configMapGenerator:\n  - name: sundial\n    behavior: replace\n    literals:\n      - SUNDIAL_NATS_URL=nats://nats:4222\n",
			"notifier reads SUNDIAL_PUBLIC_URL, which is not set"},
		{"a variable no service reads",
			"configMapGenerator:\n  - name: sundial\n    behavior: merge\n    literals:\n      - SUNDIAL_NOTIFER_SMTP_HOST=smtp.example.com\n",
			"SUNDIAL_NOTIFER_SMTP_HOST is read by no Sundial service"},
		{"a value the service refuses",
			"configMapGenerator:\n  - name: sundial\n    behavior: merge\n    literals:\n      - SUNDIAL_PUBLIC_URL=sundial.example.com\n",
			`SUNDIAL_PUBLIC_URL="sundial.example.com": want an absolute http or https URL`},
		{"a probe on a port the container lacks",
			jsonPatch("Deployment", "sundial-scheduler", "- op: replace\n  path: /spec/template/spec/containers/0/ports/0/name\n  value: metrics"),
			"a probe's port admin is not one of its ports"},
		{"a Service selecting nothing",
			jsonPatch("Service", "sundial-gateway", "- op: replace\n  path: /spec/selector\n  value: {app.kubernetes.io/name: gateway}"),
			"selects no pod of the rendering"},
		{"an object of a kind without a schema",
			"resources:\n  - ../ha\n  - podmonitor.yaml\n",
			"no schema for monitoring.coreos.com/v1, Kind=PodMonitor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := overlay(t, c.patch)
			pm := "apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata:\n  name: sundial\nspec: {}\n"
			require.NoError(t, os.WriteFile(filepath.Join(dir, "podmonitor.yaml"), []byte(pm), 0o644))
			_, err := validate.Overlay(dir)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
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
			path := filepath.Join(t.TempDir(), validate.NATSValuesFile)
			require.NoError(t, os.WriteFile(path, []byte(c.values), 0o644))
			err := validate.CheckNATSValues(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
	for _, o := range []string{"small", "ha"} {
		require.NoError(t, validate.CheckNATSValues(filepath.Join(root, validate.K8sDir, o, validate.NATSValuesFile)))
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

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

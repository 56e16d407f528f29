package crash

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/proc"
)

// TestServicesRefuseKeysThatDoNotOpenTheDatabase: the services that open
// secrets (gateway, dispatcher, notifier), started with SUNDIAL_SECRET_KEYS
// that do not open the secrets the database holds, exit at once naming the
// setting, instead of serving and failing at every use of a secret: keys
// made again under the same id (a local data folder removed while the
// database stayed), and a keyring without the key that sealed them. With
// the right keys, they start.
func TestServicesRefuseKeysThatDoNotOpenTheDatabase(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{})
	_, err := gateway.CreateProject(context.Background(), gateway.Database{URL: dbURL, SecretKeys: secrettest.Keys}, "keys", "receiver.example")
	require.NoError(t, err)
	env := map[string]string{
		"SUNDIAL_DATABASE_URL":          dbURL,
		"SUNDIAL_NATS_URL":              ns.ClientURL(),
		"SUNDIAL_HTTP_ADDR":             "127.0.0.1:0",
		"SUNDIAL_GATEWAY_ADMIN_ADDR":    "127.0.0.1:0",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR": "127.0.0.1:0",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":   "127.0.0.1:0",
		"SUNDIAL_DATABASE_MAX_CONNS":    "2",
	}
	// Without quotes: the notifier's log line is JSON, which escapes them.
	cases := map[string]struct{ keys, want string }{
		"made again": {"test:" + newKey(t), `of SUNDIAL_SECRET_KEYS is not the key`},
		"lacking":    {"other:" + newKey(t), `which SUNDIAL_SECRET_KEYS lacks (it has other)`},
	}
	services := map[string][]string{"gateway": {"serve"}, "dispatcher": nil, "notifier": nil}
	for name, c := range cases {
		procs := map[string]*proc.Process{}
		for svc, args := range services {
			procs[svc] = proc.Start(t, svc, binaries.Path(t, svc), []map[string]string{env, {"SUNDIAL_SECRET_KEYS": c.keys}}, args...)
		}
		for svc, p := range procs {
			select {
			case <-p.Done():
			case <-time.After(time.Minute):
				t.Fatalf("%s, keys %s: kept running", svc, name)
			}
			require.NotZero(t, p.ExitCode(), "%s, keys %s", svc, name)
			require.NotEmpty(t, p.Lines("SUNDIAL_SECRET_KEYS does not open the secrets stored in the database", 1), "%s, keys %s", svc, name)
			require.NotEmpty(t, p.Lines(c.want, 1), "%s, keys %s: %q", svc, name, c.want)
		}
	}

	// The right keys: the gateway serves (it answers on its API port).
	right := map[string]string{"SUNDIAL_SECRET_KEYS": secrettest.Keys, "SUNDIAL_HTTP_ADDR": freeAddr(t)}
	p := proc.Start(t, "gateway", binaries.Path(t, "gateway"), []map[string]string{env, right}, "serve")
	require.Eventually(t, func() bool {
		select {
		case <-p.Done():
			t.Fatalf("the gateway exited with the right keys")
		default:
		}
		return listening(right["SUNDIAL_HTTP_ADDR"])
	}, time.Minute, 20*time.Millisecond, "the gateway never served with the right keys")
}

// newKey is a random keyring key, as `openssl rand -base64 32` makes one.
func newKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(b)
}

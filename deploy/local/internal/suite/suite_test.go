package suite

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sundial-run/sundial/testkit/logtest"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// watched are the variables a fake service records from its environment.
var watched = []string{
	"SUNDIAL_DATABASE_URL", "SUNDIAL_NATS_URL", "SUNDIAL_DELIVERY_ALLOW_PRIVATE",
	"SUNDIAL_DELIVERY_CA_FILE", "SUNDIAL_LOG_LEVEL", "SUNDIAL_PUBLIC_URL", "SUNDIAL_SECRET_KEYS",
}

// fake is a service that records how it was built and run.
type fake struct {
	name    string
	addr    string
	newErr  error
	fail    chan error // a value makes Run return it
	env     map[string]string
	started chan struct{} // closed when Run begins
	stopped chan struct{} // closed when Run returns
	ctxDone bool          // Run's context was done when it returned
}

func newFake(name string) *fake {
	return &fake{name: name, fail: make(chan error, 1), started: make(chan struct{}), stopped: make(chan struct{})}
}

func (f *fake) service() Service {
	return Service{Name: f.name, New: func(_ context.Context, env envconf.Lookup, _ *slog.Logger) (Runner, error) {
		f.env = map[string]string{}
		for _, k := range watched {
			if v, ok := env(k); ok {
				f.env[k] = v
			}
		}
		if f.newErr != nil {
			return nil, f.newErr
		}
		if f.addr != "" {
			return listeningFake{f}, nil
		}
		return f, nil
	}}
}

func (f *fake) Run(ctx context.Context) error {
	close(f.started)
	defer close(f.stopped)
	select {
	case <-ctx.Done():
		f.ctxDone = true
		return nil
	case err := <-f.fail:
		return err
	}
}

type listeningFake struct{ *fake }

func (l listeningFake) Addr() string { return l.addr }

type bundle struct {
	env      map[string]string
	dataDir  string
	gateway  *fake
	worker   *fake
	projects chan [2]string // name, domain of each CreateProject call
	stdout   *logtest.Buffer
	ready    chan Info
	done     chan error
	cancel   context.CancelFunc
}

func setup(t *testing.T, env map[string]string) *bundle {
	t.Helper()
	dataDir := t.TempDir()
	all := map[string]string{"SUNDIAL_DATABASE_URL": pgtest.NewDB(t), "SUNDIAL_LOCAL_DATA_DIR": dataDir}
	for k, v := range env {
		all[k] = v
	}
	gw := newFake("gateway")
	gw.addr = "[::]:18080"
	return &bundle{
		env: all, dataDir: dataDir, gateway: gw, worker: newFake("worker"),
		projects: make(chan [2]string, 1), stdout: &logtest.Buffer{},
		ready: make(chan Info, 1), done: make(chan error, 1),
	}
}

// start runs the suite in the background; the test ends it with cancel.
func (b *bundle) start(t *testing.T, services ...*fake) {
	t.Helper()
	var list []Service
	for _, f := range services {
		list = append(list, f.service())
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	opts := Options{
		Services: list,
		CreateProject: func(_ context.Context, _, _, name, domain string) (Credentials, error) {
			b.projects <- [2]string{name, domain}
			return Credentials{ProjectID: "p-1", APIKey: "sk_demo", SigningKey: "whsec_demo"}, nil
		},
		Lookup: envconf.Map(b.env),
		Stdout: b.stdout,
		Stderr: &logtest.Buffer{},
		Ready:  func(in Info) { b.ready <- in },
		Grace:  10 * time.Second,
	}
	go func() { b.done <- Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		// A test of a failing start has said what it expects of this.
		if err := <-b.done; err != nil {
			t.Logf("suite ended: %v", err)
		}
	})
}

func (b *bundle) waitReady(t *testing.T) Info {
	t.Helper()
	select {
	case in := <-b.ready:
		return in
	case err := <-b.done:
		t.Fatalf("suite stopped before it was ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("suite not ready within a minute")
	}
	return Info{}
}

func (b *bundle) waitDone(t *testing.T) error {
	t.Helper()
	select {
	case err := <-b.done:
		b.done <- err // for the cleanup
		return err
	case <-time.After(time.Minute):
		t.Fatal("suite did not stop within a minute")
		return nil
	}
}

func TestServicesGetTheDecidedEnvironment(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.start(t, b.gateway, b.worker)

	info := b.waitReady(t)

	caFile := filepath.Join(b.dataDir, "demo-receiver-ca.pem")
	env := b.gateway.env
	require.Equal(t, b.env["SUNDIAL_DATABASE_URL"], env["SUNDIAL_DATABASE_URL"])
	require.Equal(t, "true", env["SUNDIAL_DELIVERY_ALLOW_PRIVATE"])
	require.Equal(t, caFile, env["SUNDIAL_DELIVERY_CA_FILE"])
	require.FileExists(t, caFile)
	kept, err := os.ReadFile(filepath.Join(b.dataDir, SecretKeysFile))
	require.NoError(t, err, "the keyring made for the services is kept")
	require.Equal(t, strings.TrimSpace(string(kept)), env["SUNDIAL_SECRET_KEYS"])
	require.NoError(t, secretbox.CheckEnv(env["SUNDIAL_SECRET_KEYS"]))
	workerEnv := maps.Clone(b.worker.env)
	require.Equal(t, "http://localhost:18080", workerEnv["SUNDIAL_PUBLIC_URL"],
		"the services after the gateway build the async URLs on its address")
	require.NotContains(t, env, "SUNDIAL_PUBLIC_URL", "decided once the gateway listens")
	delete(workerEnv, "SUNDIAL_PUBLIC_URL")
	require.Equal(t, env, workerEnv, "every service sees the same environment")
	require.True(t, info.AllowedPrivate)

	nc, err := nats.Connect(env["SUNDIAL_NATS_URL"])
	require.NoError(t, err, "the embedded NATS server must accept clients")
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.AccountInfo(context.Background())
	require.NoError(t, err, "JetStream must be enabled")

	project := <-b.projects
	require.Equal(t, "demo", project[0])
	require.Equal(t, info.ReceiverURL, "https://"+project[1], "the demo project delivers to the demo receiver")
}

func TestBannerShowsHowToUseIt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.start(t, b.gateway)

	info := b.waitReady(t)

	require.Equal(t, "http://localhost:18080/v1", info.APIBase)
	out := b.stdout.String()
	require.Contains(t, out, "http://localhost:18080/v1")
	require.Contains(t, out, "p-1")
	require.Contains(t, out, "whsec_demo")
	require.Contains(t, out, `curl -sS -X POST http://localhost:18080/v1/hooks -H "X-API-Key: sk_demo" -H "Content-Type: application/json" -d '{"path":"/webhooks/demo","postIn":"5s","data":{"hello":"world"}}'`)
	require.Contains(t, out, `curl -sS http://localhost:18080/v1/hooks/<id> -H "X-API-Key: sk_demo"`)
	require.Contains(t, out, "SUNDIAL_DELIVERY_ALLOW_PRIVATE=true")
}

func TestPersonsSettingsWin(t *testing.T) {
	t.Parallel()
	natsSrv := natstest.Start(t, natstest.Options{})
	b := setup(t, map[string]string{
		"SUNDIAL_DELIVERY_ALLOW_PRIVATE": "false",
		"SUNDIAL_DEMO":                   "false",
		"SUNDIAL_NATS_URL":               natsSrv.ClientURL(),
	})
	b.start(t, b.worker)

	info := b.waitReady(t)

	require.Equal(t, "false", b.worker.env["SUNDIAL_DELIVERY_ALLOW_PRIVATE"])
	require.Equal(t, natsSrv.ClientURL(), b.worker.env["SUNDIAL_NATS_URL"])
	require.False(t, info.AllowedPrivate)
	require.Nil(t, info.Project)
	require.Empty(t, b.projects, "SUNDIAL_DEMO=false creates no project")
	require.NotContains(t, b.stdout.String(), "SUNDIAL_DELIVERY_ALLOW_PRIVATE=true")
}

func TestPersonsPublicURLWins(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]string{"SUNDIAL_PUBLIC_URL": "https://sundial.example.com", "SUNDIAL_DEMO": "false"})
	b.start(t, b.gateway, b.worker)
	b.waitReady(t)
	require.Equal(t, "https://sundial.example.com", b.worker.env["SUNDIAL_PUBLIC_URL"])
}

func TestCtrlCStopsServicesGracefully(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.start(t, b.gateway, b.worker)
	b.waitReady(t)

	b.cancel()

	require.NoError(t, b.waitDone(t))
	for _, f := range []*fake{b.gateway, b.worker} {
		<-f.stopped
		require.True(t, f.ctxDone, "%s must be stopped through its context", f.name)
	}
}

func TestFailedStartClosesWhatStarted(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.worker.newErr = errors.New("no such thing")
	b.start(t, b.gateway, b.worker)

	err := b.waitDone(t)

	require.ErrorContains(t, err, "start worker: no such thing")
	<-b.gateway.stopped
	require.True(t, b.gateway.ctxDone, "a service built before the failure must be closed through Run")
}

func TestFailingServiceStopsTheRest(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.start(t, b.gateway, b.worker)
	b.waitReady(t)
	<-b.worker.started

	b.worker.fail <- errors.New("lost the database")

	err := b.waitDone(t)
	require.ErrorContains(t, err, "worker: lost the database")
	<-b.gateway.stopped
	require.True(t, b.gateway.ctxDone)
}

func TestEmbeddedNATSKeepsItsStoreInTheDataFolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", ".data")
	b := setup(t, map[string]string{"SUNDIAL_LOCAL_DATA_DIR": dir})
	b.start(t, b.worker)

	b.waitReady(t)

	_, err := os.Stat(filepath.Join(dir, "nats"))
	require.NoError(t, err, "the embedded NATS server keeps its store in the data folder")
}

// The keyring made on the first run is the one of every later run (the
// kept database's secrets are sealed with it), and private to its user.
func TestTheSecretKeysAreMadeOnceAndKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := localSecretKeys(dir)
	require.NoError(t, err)
	require.NoError(t, secretbox.CheckEnv(first))
	info, err := os.Stat(filepath.Join(dir, SecretKeysFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	again, err := localSecretKeys(dir)
	require.NoError(t, err)
	require.Equal(t, first, again)

	require.NoError(t, os.WriteFile(filepath.Join(dir, SecretKeysFile), []byte("k1:short\n"), 0o600))
	_, err = localSecretKeys(dir)
	require.ErrorContains(t, err, "damaged")
	require.NotContains(t, err.Error(), "short")
}

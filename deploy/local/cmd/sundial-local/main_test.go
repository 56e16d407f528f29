package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/deploy/local/internal/suite"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	info   suite.Info
	stdout *logtest.Buffer
	cancel context.CancelFunc
	done   chan error
}

// place is where a run keeps its state: its database and data folder.
type place struct{ databaseURL, dataDir string }

func newPlace(t *testing.T) place {
	return place{databaseURL: pgtest.NewDB(t), dataDir: t.TempDir()}
}

// setup runs the real suite, as `make run` does, on a database and ports of
// the test's own.
func setup(t *testing.T) bundle {
	t.Helper()
	return start(t, newPlace(t))
}

// start runs the real suite in p, as `make run` does, on ports of its own.
func start(t *testing.T, p place) bundle {
	t.Helper()
	env := envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL": p.databaseURL,
		"SUNDIAL_HTTP_ADDR":    "127.0.0.1:0",
		// The admin listeners too: tests run side by side.
		"SUNDIAL_GATEWAY_ADMIN_ADDR":    "127.0.0.1:0",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":  "127.0.0.1:0",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR": "127.0.0.1:0",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":   "127.0.0.1:0",
		"SUNDIAL_LOCAL_DATA_DIR":        p.dataDir,
		"SUNDIAL_LOG_LEVEL":             "warn",
	})
	ctx, cancel := context.WithCancel(context.Background())
	b := bundle{stdout: &logtest.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan suite.Info, 1)
	go func() {
		b.done <- suite.Run(ctx, suite.Options{
			Services:      services(),
			CreateProject: createProject,
			CreateUser:    createUser,
			Lookup:        env,
			Stdout:        b.stdout,
			Stderr:        io.Discard,
			Ready:         func(in suite.Info) { ready <- in },
		})
	}()
	t.Cleanup(cancel)
	select {
	case b.info = <-ready:
	case err := <-b.done:
		t.Fatalf("suite stopped before it was ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("suite not ready within a minute")
	}
	return b
}

func TestScheduledHookReachesTheDemoReceiverSigned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.requireDelivered(t)
	b.requireDemoLogin(t)
	b.stop(t)
}

// requireDemoLogin signs in to the dashboard with the login the banner shows.
func (b bundle) requireDemoLogin(t *testing.T) {
	t.Helper()
	require.NotNil(t, b.info.Login)
	dashboard := strings.TrimSuffix(b.info.APIBase, "/v1") + "/dashboard"
	require.Contains(t, b.stdout.String(), "Dashboard: "+dashboard)
	require.Contains(t, b.stdout.String(), b.info.Login.Password)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(dashboard+"/signin", url.Values{"email": {b.info.Login.Email}, "password": {b.info.Login.Password}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Set-Cookie"), "sundial_session=")
}

// requireDelivered schedules a hook in the demo project and waits for the
// demo receiver to log it with a verified signature.
func (b bundle) requireDelivered(t *testing.T) {
	t.Helper()
	require.NotNil(t, b.info.Project)

	body := `{"path":"/webhooks/demo","postIn":"1s","data":{"hello":"world"}}`
	req, err := http.NewRequest(http.MethodPost, b.info.APIBase+"/hooks", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-API-Key", b.info.Project.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var created struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	require.NotEmpty(t, created.Data.ID)

	require.Eventually(t, func() bool {
		out := b.stdout.String()
		return strings.Contains(out, `"Sundial-Id":"`+created.Data.ID+`"`) && strings.Contains(out, `"signature":"valid"`)
	}, 30*time.Second, 50*time.Millisecond, "the demo receiver must log a verified delivery of the hook; stdout:\n%s", b.stdout)
}

// stop is Ctrl-C: everything must stop cleanly.
func (b bundle) stop(t *testing.T) {
	t.Helper()
	b.cancel()
	select {
	case err := <-b.done:
		require.NoError(t, err, "Ctrl-C must stop everything cleanly")
	case <-time.After(time.Minute):
		t.Fatal("suite did not stop within a minute")
	}
}

func TestARestartReusesTheDemoProject(t *testing.T) {
	t.Parallel()
	p := newPlace(t)
	first := start(t, p)
	require.NotNil(t, first.info.Project)
	require.False(t, first.info.ProjectReused)
	first.stop(t)

	file := filepath.Join(p.dataDir, suite.DemoFile)
	fi, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the plain API key is in it")

	second := start(t, p)
	require.True(t, second.info.ProjectReused)
	require.Equal(t, *first.info.Project, *second.info.Project, "the same project and keys")
	require.Contains(t, second.stdout.String(), first.info.Project.APIKey, "the banner shows the key again")
	require.Contains(t, second.stdout.String(), "reused from "+file)
	// The receiver listens on a new port each run: the project follows it.
	second.requireDelivered(t)
	second.stop(t)
}

func TestAReusedDemoProjectHasItsCurrentSigningKey(t *testing.T) {
	t.Parallel()
	p := newPlace(t)
	first := start(t, p)
	req, err := http.NewRequest(http.MethodPost, first.info.APIBase+"/signing-keys/rotate", nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", first.info.Project.APIKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var rotated struct {
		Data []struct{ State, Key string } `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&rotated))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, "active", rotated.Data[0].State)
	first.stop(t)

	second := start(t, p)
	require.True(t, second.info.ProjectReused)
	require.Equal(t, rotated.Data[0].Key, second.info.Project.SigningKey, "the banner and the receiver get the new key")
	second.stop(t)

	third := start(t, p)
	require.Equal(t, rotated.Data[0].Key, third.info.Project.SigningKey, "and the file keeps it")
	third.stop(t)
}

func TestAKeptProjectOfAnotherDatabaseIsReplaced(t *testing.T) {
	t.Parallel()
	p := newPlace(t)
	first := start(t, p)
	first.stop(t)

	p.databaseURL = pgtest.NewDB(t) // the kept key means nothing here
	second := start(t, p)
	require.False(t, second.info.ProjectReused)
	require.NotEqual(t, first.info.Project.ProjectID, second.info.Project.ProjectID)
	second.requireDelivered(t)
	second.stop(t)

	third := start(t, p)
	require.True(t, third.info.ProjectReused, "the new project is the one kept now")
	require.Equal(t, *second.info.Project, *third.info.Project)
	third.stop(t)
}

func TestHelpPrintsUsageAndStartsNothing(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help"} {
		var out strings.Builder
		require.ErrorIs(t, parseArgs([]string{arg}, &out), flag.ErrHelp, arg)
		require.Contains(t, out.String(), "Usage: sundial-local")
		require.Contains(t, out.String(), "SUNDIAL_LOCAL_DATA_DIR")
	}
	require.NoError(t, parseArgs(nil, io.Discard))
	var out strings.Builder
	err := parseArgs([]string{"serve"}, &out)
	require.Error(t, err)
	require.NotErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, out.String(), "Usage: sundial-local", "a wrong argument shows the usage too")
}

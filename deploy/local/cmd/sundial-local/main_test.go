package main

import (
	"context"
	"encoding/json"
	"github.com/sundial-run/sundial/testkit/logtest"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/deploy/local/internal/suite"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	info   suite.Info
	stdout *logtest.Buffer
	cancel context.CancelFunc
	done   chan error
}

// setup runs the real suite, as `make run` does, on a database and ports of
// the test's own.
func setup(t *testing.T) bundle {
	t.Helper()
	env := envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL":   pgtest.NewDB(t),
		"SUNDIAL_HTTP_ADDR":      "127.0.0.1:0",
		"SUNDIAL_LOCAL_DATA_DIR": t.TempDir(),
		"SUNDIAL_LOG_LEVEL":      "warn",
	})
	ctx, cancel := context.WithCancel(context.Background())
	b := bundle{stdout: &logtest.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan suite.Info, 1)
	go func() {
		b.done <- suite.Run(ctx, suite.Options{
			Services:      services(),
			CreateProject: createProject,
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

	b.cancel()
	select {
	case err := <-b.done:
		require.NoError(t, err, "Ctrl-C must stop everything cleanly")
	case <-time.After(time.Minute):
		t.Fatal("suite did not stop within a minute")
	}
}

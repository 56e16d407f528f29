package adminhttp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/adminhttp"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(body)
}

// TestServerAnswersAndStops: /healthz is 200 whatever the checks say;
// /readyz is 503 naming the first failing check, 200 once all pass; a check
// that outlasts CheckTimeout makes it 503, not a hung request; the
// listener closes when the context ends.
func TestServerAnswersAndStops(t *testing.T) {
	t.Parallel()
	var dbDown, hang atomic.Bool
	dbDown.Store(true)
	checks := []adminhttp.Check{
		{Name: "database", Probe: func(context.Context) error {
			if dbDown.Load() {
				return errors.New("connection refused")
			}
			return nil
		}},
		{Name: "nats", Probe: func(ctx context.Context) error {
			if hang.Load() {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}},
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "# metrics\n") })
	logs := &lockedBuffer{}
	s, err := adminhttp.New(t.Context(), "127.0.0.1:0", "SUNDIAL_TEST_ADMIN_ADDR", metrics, checks, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	base := "http://" + s.Addr()

	status, body := get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok\n", body)
	status, body = get(t, base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "not ready: database\n", body, "the check's name, not its error's text")
	require.Contains(t, logs.String(), `msg="not ready" check=database err="connection refused"`, "why, in the log")

	dbDown.Store(false)
	status, body = get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ready\n", body)

	hang.Store(true)
	started := time.Now()
	status, body = get(t, base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "not ready: nats\n", body)
	require.Contains(t, logs.String(), `check=nats err="context deadline exceeded"`)
	require.Less(t, time.Since(started), adminhttp.CheckTimeout+time.Second)

	status, body = get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "# metrics\n", body)

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	_, err = net.Dial("tcp", s.Addr())
	require.Error(t, err, "the listener is closed")
}

func TestNewRefusesABusyAddress(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() })
	_, err = adminhttp.New(t.Context(), busy.Addr().String(), "SUNDIAL_TEST_ADMIN_ADDR", http.NotFoundHandler(), nil, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "admin listener on "+busy.Addr().String())
	require.ErrorContains(t, err, "(SUNDIAL_TEST_ADMIN_ADDR moves it; port 0 picks a free one)")
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	require.NoError(t, adminhttp.CheckAddr(":9090"))
	require.NoError(t, adminhttp.CheckAddr("127.0.0.1:0"))
	require.Error(t, adminhttp.CheckAddr("9090"))
	require.Error(t, adminhttp.CheckAddr(""))
}

// lockedBuffer is a log's output that the test reads while the server
// writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

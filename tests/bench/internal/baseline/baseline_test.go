package baseline

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	https "github.com/sundial-run/sundial/testkit/receiver"
	"github.com/sundial-run/sundial/tests/bench/internal/baseline/delivery"
)

const testKey = "sig_baseline_test_key"

// request is one POST the test receiver got.
type request struct {
	at        time.Time
	id        string
	timestamp string
	signature string
	proto     int
	body      []byte
}

// recorder is a small TLS receiver (HTTP/1.1 and HTTP/2) that keeps every
// request whole, so the test can check signatures.
type recorder struct {
	srv    *https.Receiver
	caFile string
	mu     sync.Mutex
	got    []request
}

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = https.StartT(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, request{at, req.Header.Get("Sundial-Id"), req.Header.Get("Sundial-Timestamp"),
			req.Header.Get("Sundial-Signature"), req.ProtoMajor, body})
		r.mu.Unlock()
	}), https.Options{HTTP2: true})
	r.caFile = https.CAFile(t)
	return r
}

func (r *recorder) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.got...)
}

type testBundle struct {
	ctx      context.Context
	baseline *Baseline
	receiver *recorder
}

// binDir holds riverbase, built once for the package's tests.
var binDir string

// binary builds riverbase on first use.
var binary = sync.OnceValues(func() (string, error) { return Build(context.Background(), binDir) })

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "riverbase-test-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func setup(t *testing.T) testBundle {
	t.Helper()
	adminURL := os.Getenv("SUNDIAL_TEST_DATABASE_URL")
	require.NotEmpty(t, adminURL, "SUNDIAL_TEST_DATABASE_URL must name a PostgreSQL server (make test sets it through withpg)")
	bin, err := binary()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	rec := startRecorder(t)
	b, err := Start(ctx, Options{
		DatabaseURL: adminURL, CreateDatabase: true, ReceiverURL: rec.srv.URL(), CAFile: rec.caFile,
		SigningKey: testKey, Dir: t.TempDir(), Workers: 20, Binary: bin,
		Env: map[string]string{"RIVERBASE_LOG_EVERY": "10"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close(context.Background())) })
	return testBundle{ctx: ctx, baseline: b, receiver: rec}
}

func TestScheduledJobsArriveOnceOnTimeSigned(t *testing.T) {
	t.Parallel()
	s := setup(t)
	at := time.Now().Add(time.Second)
	want := map[string]bool{}
	var jobs []Job
	for range 50 {
		id := uuid.NewString()
		want[id] = true
		jobs = append(jobs, Job{ID: id, At: at, Path: "/hook?x=1"})
	}
	require.NoError(t, s.baseline.Schedule(s.ctx, jobs))

	// River's scheduler sweeps every 5 s (see MinLead): up to 6 s late.
	require.Eventually(t, func() bool { return len(s.receiver.requests()) >= len(jobs) }, 30*time.Second, 20*time.Millisecond)
	got := s.receiver.requests()
	require.Len(t, got, len(jobs), "duplicates")
	for _, r := range got {
		require.True(t, want[r.id], "unknown or repeated id %q", r.id)
		delete(want, r.id)
		require.False(t, r.at.Before(at), "early by %s", at.Sub(r.at))
		require.Equal(t, 2, r.proto, "HTTP/2 with keep-alive")
		ts, err := strconv.ParseInt(r.timestamp, 10, 64)
		require.NoError(t, err)
		require.True(t, hmac.Equal([]byte(delivery.Sign(testKey, ts, r.body)), []byte(r.signature)), "signature of %s", r.id)
		var body struct{ ID, Path, PostAt, PostedAt string }
		require.NoError(t, json.Unmarshal(r.body, &body))
		require.Equal(t, r.id, body.ID)
		require.Equal(t, "/hook?x=1", body.Path)
	}
	require.Empty(t, want)
	require.Positive(t, s.baseline.PeakRSS())
	require.Equal(t, "20", s.baseline.Settings()["RIVERBASE_MAX_WORKERS"])
}

func TestLoadBacklogIsNeverDelivered(t *testing.T) {
	t.Parallel()
	s := setup(t)
	require.NoError(t, s.baseline.LoadBacklog(s.ctx, insertChunk+5))
	var n int
	require.NoError(t, s.baseline.pool.QueryRow(s.ctx, statement("count-scheduled")).Scan(&n))
	require.Equal(t, insertChunk+5, n)
	// A job due now still goes through while the backlog waits.
	id := uuid.NewString()
	require.NoError(t, s.baseline.Schedule(s.ctx, []Job{{ID: id, At: time.Now(), Path: "/now"}}))
	require.Eventually(t, func() bool { return len(s.receiver.requests()) == 1 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, id, s.receiver.requests()[0].id)
	require.Positive(t, s.baseline.CPU())
}

func TestStartReportsARiverbaseThatExits(t *testing.T) {
	t.Parallel()
	adminURL := os.Getenv("SUNDIAL_TEST_DATABASE_URL")
	require.NotEmpty(t, adminURL, "SUNDIAL_TEST_DATABASE_URL must name a PostgreSQL server")
	bin, err := binary()
	require.NoError(t, err)
	rec := startRecorder(t)
	// River refuses a poll interval shorter than the fetch cooldown.
	b, err := Start(context.Background(), Options{
		DatabaseURL: adminURL, CreateDatabase: true, ReceiverURL: rec.srv.URL(), CAFile: rec.caFile,
		SigningKey: testKey, Dir: t.TempDir(), Binary: bin,
		Env: map[string]string{"RIVERBASE_FETCH_COOLDOWN": "100ms", "RIVERBASE_FETCH_POLL_INTERVAL": "50ms"},
	})
	require.ErrorContains(t, err, "riverbase exited")
	require.Nil(t, b)
}

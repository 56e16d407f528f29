package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/dispatcher/app"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	cfg      app.Config
	pool     *pgxpool.Pool
	js       jetstream.JetStream
	nats     *natstest.Server
	receiver *fixture.Receiver
}

func setup(t *testing.T, answer http.HandlerFunc) bundle {
	t.Helper()
	pool, dbURL := pgtest.NewPool(t)
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	receiver := fixture.StartReceiver(t, answer)
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL":          dbURL,
		"SUNDIAL_NATS_URL":              srv.ClientURL(),
		"SUNDIAL_DELIVERY_CA_FILE":      fixture.CAFile(t, receiver),
		"SUNDIAL_DELIVERY_ALLOW_CIDRS":  "127.0.0.0/8",
		"SUNDIAL_SHUTDOWN_TIMEOUT":      "5s",
		"SUNDIAL_SECRET_KEYS":           secrettest.Keys,
		"SUNDIAL_DISPATCHER_ADMIN_ADDR": "127.0.0.1:0",
	}))
	require.NoError(t, err)
	return bundle{cfg: cfg, pool: pool, js: js, nats: srv, receiver: receiver}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// running is an App running in the background until the test ends.
type running struct {
	app    *app.App
	cancel context.CancelFunc
	done   chan error
}

// start runs an app whose metrics its admin listener serves.
func start(t *testing.T, cfg app.Config) *running {
	t.Helper()
	metrics, err := telemetry.NewMetrics("dispatcher", "test")
	require.NoError(t, err)
	a, err := app.NewWith(context.Background(), cfg, quiet(), telemetry.WithMetrics(metrics))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{app: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		// A test that stopped NATS or PostgreSQL first may have made it
		// fail; what matters here is that it stopped.
		if err := <-r.done; err != nil {
			t.Logf("dispatcher stopped: %v", err)
		}
	})
	return r
}

// wait returns what Run returned once its context has ended.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of its context ending")
		return nil
	}
}

// stop ends Run's context and returns what Run returned.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	return r.wait(t)
}

// publishDue publishes a hook in a DueHooks of its own, as the scheduler
// publishes a hook that comes due alone.
func publishDue(t *testing.T, js jetstream.JetStream, due *eventv1.DueHook) {
	t.Helper()
	require.NoError(t, bus.NewPublisher(js).Publish(context.Background(), bus.DueHooks([]*eventv1.DueHook{due})))
}

func waitForResult(t *testing.T, js jetstream.JetStream) *fixture.Result {
	t.Helper()
	var res *fixture.Result
	require.Eventually(t, func() bool {
		res = fixture.LastResult(t, js)
		return res != nil
	}, 10*time.Second, 20*time.Millisecond)
	return res
}

func dueMessages(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), event.StreamDue)
	require.NoError(t, err)
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	return info.State.Msgs
}

func TestAppDeliversDueHooksAndReportsResults(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Sundial-Async-Timeout", "120")
		w.WriteHeader(http.StatusAccepted)
	})
	r := start(t, b.cfg)

	projectID := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "whsec_app"})
	due := fixture.DueHook(projectID, b.receiver.URL+"/hooks/app", "/hooks/app")
	publishDue(t, b.js, due)

	req := b.receiver.WaitFor(t, 1)[0]
	require.Equal(t, "/hooks/app", req.Path)
	require.Equal(t, "Sundial/"+app.Version+" (+https://github.com/sundial-run/sundial)", req.Header.Get("User-Agent"))

	res := waitForResult(t, b.js)
	// Batched (the default): the batch's id derives from its results.
	require.Equal(t, event.TypeAttemptResults, res.Type)
	require.Equal(t, event.ResultsMsgID([]string{due.GetHookId()}, []int64{7}), res.MsgID)
	require.Equal(t, due.GetHookId(), res.GetHookId())
	require.Equal(t, eventv1.Outcome_OUTCOME_ASYNC, res.GetOutcome())
	require.EqualValues(t, 120, res.GetAsyncTimeoutSeconds())
	require.EqualValues(t, 202, res.GetStatusCode())

	require.NoError(t, r.stop(t))
	require.Len(t, b.receiver.Received(), 1)
	// Acknowledged: the work queue lets go of it.
	require.Eventually(t, func() bool { return dueMessages(t, b.js) == 0 }, 10*time.Second, 20*time.Millisecond)
}

func TestAppRefusesPrivateDestinationsByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	cfg := b.cfg
	cfg.AllowCIDRs = nil
	start(t, cfg)

	projectID := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "k"})
	publishDue(t, b.js, fixture.DueHook(projectID, b.receiver.URL+"/x", "/x"))
	res := waitForResult(t, b.js)
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.GetOutcome())
	require.Equal(t, "refused: destination 127.0.0.1 is a loopback address", res.GetError())
	require.Empty(t, b.receiver.Received())
}

func TestAppTerminatesMalformedMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	start(t, b.cfg)

	_, err := b.js.Publish(context.Background(), event.SubjectDue, []byte("\xff\xff not a DueHook"))
	require.NoError(t, err)
	// A well-formed hook alone, not in a DueHooks (no Sundial-Type): not
	// read, so not delivered.
	projectID := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "k"})
	alone, err := proto.Marshal(fixture.DueHook(projectID, b.receiver.URL+"/x", "/x"))
	require.NoError(t, err)
	_, err = b.js.Publish(context.Background(), event.SubjectDue, alone)
	require.NoError(t, err)
	// Terminated, it leaves the work queue instead of coming back.
	require.Eventually(t, func() bool { return dueMessages(t, b.js) == 0 }, 10*time.Second, 20*time.Millisecond)
	require.Nil(t, fixture.LastResult(t, b.js))
}

func TestAppFinishesInFlightDeliveriesOnShutdown(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	release := make(chan struct{})
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		close(arrived)
		<-release
	})
	r := start(t, b.cfg)

	projectID := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "k"})
	publishDue(t, b.js, fixture.DueHook(projectID, b.receiver.URL+"/x", "/x"))
	<-arrived
	// The shutdown begins while the receiver is still answering; the
	// delivery completes and reports its result before Run returns.
	r.cancel()
	close(release)
	require.NoError(t, r.wait(t))
	res := fixture.LastResult(t, b.js)
	require.NotNil(t, res)
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.GetOutcome())
	require.Eventually(t, func() bool { return dueMessages(t, b.js) == 0 }, 10*time.Second, 20*time.Millisecond)
}

func TestAppHandsBackDeliveriesThatOutlastTheShutdownTimeout(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	release := make(chan struct{})
	b := setup(t, func(w http.ResponseWriter, req *http.Request) {
		close(arrived)
		select {
		case <-release:
		case <-req.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	cfg := b.cfg
	cfg.ShutdownTimeout = 200 * time.Millisecond
	r := start(t, cfg)

	projectID := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "k"})
	publishDue(t, b.js, fixture.DueHook(projectID, b.receiver.URL+"/x", "/x"))
	<-arrived
	require.NoError(t, r.stop(t))
	// No result: the DueHook went back to the stream for another replica.
	require.Nil(t, fixture.LastResult(t, b.js))
	require.EqualValues(t, 1, dueMessages(t, b.js))
}

func TestNewRejectsABadCAFile(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	missing := b.cfg
	missing.CAFile = filepath.Join(t.TempDir(), "missing.pem")
	_, err := app.New(context.Background(), missing, quiet())
	require.ErrorContains(t, err, "SUNDIAL_DELIVERY_CA_FILE")

	empty := b.cfg
	empty.CAFile = filepath.Join(t.TempDir(), "empty.pem")
	require.NoError(t, os.WriteFile(empty.CAFile, []byte("no certificates here"), 0o600))
	_, err = app.New(context.Background(), empty, quiet())
	require.ErrorContains(t, err, "no PEM certificate")
}

func TestNewRejectsAnInvalidConfig(t *testing.T) {
	t.Parallel()
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{"SUNDIAL_SECRET_KEYS": secrettest.Keys}))
	require.NoError(t, err)
	cfg.Concurrency = 0
	_, err = app.New(context.Background(), cfg, quiet())
	require.ErrorContains(t, err, "SUNDIAL_DISPATCHER_CONCURRENCY")
}

func TestNewFailsWithoutDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	cfg := b.cfg
	cfg.DatabaseURL = "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"
	_, err := app.New(context.Background(), cfg, quiet())
	require.ErrorContains(t, err, "connect to database")
}

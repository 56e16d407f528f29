package app_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/app"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	cfg  app.Config
	q    *storetest.Queries
	js   jetstream.JetStream
	nats *natstest.Server
	log  *slog.Logger
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, dbURL := pgtest.NewPool(t)
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	cfg, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL":            dbURL,
		"SUNDIAL_NATS_URL":                srv.ClientURL(),
		"SUNDIAL_SCHEDULER_POLL_INTERVAL": "20ms",
		"SUNDIAL_LEASE_DURATION":          "3s",
		"SUNDIAL_SHUTDOWN_TIMEOUT":        "5s",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":    "127.0.0.1:0",
	}))
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return bundle{cfg: cfg, q: storetest.New(pool), js: js, nats: srv, log: log}
}

// start boots the app and returns a function that stops it and waits for
// Run to return cleanly.
func (b bundle) start(t *testing.T) (stop func()) {
	t.Helper()
	_, stop = b.boot(t)
	return stop
}

// boot is start that also returns the app, whose metrics its admin
// listener serves.
func (b bundle) boot(t *testing.T) (a *app.App, stop func()) {
	t.Helper()
	metrics, err := telemetry.NewMetrics(app.Name, "test")
	require.NoError(t, err)
	a, err = app.NewWith(context.Background(), b.cfg, b.log, telemetry.WithMetrics(metrics))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
	}
	t.Cleanup(stop)
	return a, stop
}

// dispatcher stands in for the dispatcher service: it takes DueHooks from
// the stream and reports results.
type dispatcher struct {
	t    *testing.T
	cons jetstream.Consumer
	pub  *bus.Publisher
}

// dispatcher must be created before the app starts: the in-process
// nats-server (v2.15.2) has a data race between a stream update (the app's
// EnsureStreams) and a consumer being created on that stream at the same
// moment, which -race reports.
func (b bundle) dispatcher(t *testing.T) dispatcher {
	t.Helper()
	require.NoError(t, event.EnsureStreams(context.Background(), b.js, event.DefaultReplicas))
	c := event.DispatcherConsumer(event.DefaultReplicas)
	cons, err := b.js.CreateOrUpdateConsumer(context.Background(), c.Stream, c.Config)
	require.NoError(t, err)
	return dispatcher{t: t, cons: cons, pub: bus.NewPublisher(b.js)}
}

// next takes the next due message, a DueHooks batch of one hook (the
// tests' hooks come due one at a time), with a hold when the hook was
// claimed ahead of its due instant. Its hold is not waited out: these
// tests look at what the scheduler does with the results.
func (d dispatcher) next() *eventv1.DueHook {
	d.t.Helper()
	msg, err := d.cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	require.NoError(d.t, err)
	require.NoError(d.t, msg.Ack())
	hooks, err := event.DecodeDue(msg.Headers().Get(event.TypeHeader), msg.Data())
	require.NoError(d.t, err)
	require.Len(d.t, hooks, 1)
	return hooks[0]
}

func (d dispatcher) report(due *eventv1.DueHook, outcome eventv1.Outcome, status int32, errText string) {
	d.t.Helper()
	err := d.pub.Publish(context.Background(), bus.AttemptResults([]*eventv1.AttemptResult{{
		HookId: due.GetHookId(), ProjectId: due.GetProjectId(), Attempt: due.GetAttempt(),
		LeaseSeq: due.GetLeaseSeq(), Outcome: outcome, StatusCode: status, Error: errText,
		StartedAt: timestamppb.Now(), Duration: durationpb.New(80 * time.Millisecond),
	}}))
	require.NoError(d.t, err)
}

func TestHookIsRetriedThenCompleted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t)
	b.start(t)
	// One retry, one second after the first failure.
	project := fixture.Project(t, b.q, "receiver.example.com",
		retry.Policy{MinRetries: 1, DelaySecs: 1, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600})
	hook := fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: "receiver.example.com", Path: "/x", DueIn: 0})

	first := d.next()
	require.Equal(t, hook.ID.String(), first.GetHookId())
	require.EqualValues(t, 1, first.GetAttempt())
	require.EqualValues(t, 2, first.GetMaxAttempts())
	d.report(first, eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503")
	require.Eventually(t, func() bool {
		return fixture.Get(t, b.q, hook.ID).Status == "retry"
	}, 10*time.Second, 10*time.Millisecond)

	second := d.next()
	require.Equal(t, hook.ID.String(), second.GetHookId())
	require.EqualValues(t, 2, second.GetAttempt())
	require.Greater(t, second.GetLeaseSeq(), first.GetLeaseSeq())
	d.report(second, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")
	require.Eventually(t, func() bool {
		return fixture.Get(t, b.q, hook.ID).Status == "completed"
	}, 10*time.Second, 10*time.Millisecond)

	row := fixture.Get(t, b.q, hook.ID)
	require.EqualValues(t, 2, row.Attempts)
	require.Nil(t, row.FailureError)
	attempts := fixture.Attempts(t, b.q, hook.ID)
	require.Len(t, attempts, 2)
	require.Equal(t, "failure", attempts[0].Outcome)
	require.Equal(t, "success", attempts[1].Outcome)
}

func TestHookThatKeepsFailingRaisesAnAlert(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t)
	b.start(t)
	project := fixture.Project(t, b.q, "receiver.example.com",
		retry.Policy{MinRetries: 0, DelaySecs: 1, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600})
	hook := fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: "receiver.example.com", DueIn: -time.Minute})

	d.report(d.next(), eventv1.Outcome_OUTCOME_FAILURE, 0, "timeout after 10s")
	require.Eventually(t, func() bool {
		return fixture.CountMessages(b.js, event.StreamAlerts) == 1
	}, 10*time.Second, 10*time.Millisecond)
	alert := fixture.Alert(t, natstest.StreamMessages(t, b.js, event.StreamAlerts)[0])
	require.Equal(t, hook.ID.String(), alert.GetHookId())
	require.Equal(t, "timeout after 10s", alert.GetError())
	require.Equal(t, "failed", fixture.Get(t, b.q, hook.ID).Status)
}

func TestRunStopsCleanlyAndNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stop := b.start(t)
	stop()

	bad := b.cfg
	bad.ClaimBatchSize = 0
	_, err := app.New(context.Background(), bad, b.log)
	require.ErrorContains(t, err, "SUNDIAL_SCHEDULER_BATCH_SIZE")
}

func TestNewFailsWhenTheDatabaseIsUnreachable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.cfg
	cfg.DatabaseURL = "postgres://postgres@127.0.0.1:1/sundial?sslmode=disable&connect_timeout=2"
	_, err := app.New(context.Background(), cfg, b.log)
	require.Error(t, err)
}

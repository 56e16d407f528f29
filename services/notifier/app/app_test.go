package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/notifier/app"
	"github.com/sundial-run/sundial/services/notifier/notifiertest"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/testkit/smtptest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// wait is the bound of every wait for the notifier: generous, since CI runs
// on 2 cores with -race.
const wait = 30 * time.Second

type fixture struct {
	cfg      app.Config
	nats     *natstest.Server
	js       jetstream.JetStream
	db       *notifiertest.DB
	receiver *notifiertest.Receiver
	dbName   string
	dbURL    string
	logs     *logtest.Buffer
	log      *slog.Logger
}

// setup gives a test a fresh database and NATS server, a TLS chat receiver
// and a notifier Config with short intervals; extra overrides it.
func setup(t *testing.T, extra map[string]string) fixture {
	t.Helper()
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	dbURL := pgtest.NewDB(t)
	rcv := notifiertest.NewReceiver(t)
	env := map[string]string{
		"SUNDIAL_NATS_URL":               srv.ClientURL(),
		"SUNDIAL_DATABASE_URL":           dbURL,
		"SUNDIAL_SHUTDOWN_TIMEOUT":       "5s",
		"SUNDIAL_NOTIFIER_POLL_INTERVAL": "100ms",
		"SUNDIAL_DELIVERY_ALLOW_PRIVATE": "true",
		"SUNDIAL_DELIVERY_CA_FILE":       rcv.CAFile,
		"SUNDIAL_SECRET_KEYS":            secrettest.Keys,
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":    "127.0.0.1:0",
	}
	for k, v := range extra {
		env[k] = v
	}
	cfg, err := app.ConfigFromEnv(envconf.Map(env))
	require.NoError(t, err)
	logs := &logtest.Buffer{}
	conn, err := pgx.ParseConfig(dbURL)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("notifier log:\n%s", logs.String())
		}
	})
	return fixture{
		cfg:      cfg,
		nats:     srv,
		js:       js,
		db:       notifiertest.Open(t, dbURL),
		receiver: rcv,
		dbName:   conn.Database,
		dbURL:    dbURL,
		logs:     logs,
		log:      slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// runner is a running notifier.
type runner struct {
	app    *app.App
	cancel context.CancelFunc
	done   chan error
}

// start runs a notifier until the test ends.
func (f fixture) start(t *testing.T) *runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	metrics, err := telemetry.NewMetrics("notifier", "test")
	require.NoError(t, err)
	a, err := app.NewWith(ctx, f.cfg, f.log, telemetry.WithMetrics(metrics))
	require.NoError(t, err)
	r := &runner{app: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		// A test that stopped NATS or PostgreSQL first may have made it
		// fail; what matters here is that it stopped.
		if err := <-r.done; err != nil {
			t.Logf("notifier stopped: %v", err)
		}
	})
	return r
}

// stop stops the notifier as SIGTERM does and requires a clean return.
func (r *runner) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	r.wait(t)
}

// wait requires Run to return cleanly.
func (r *runner) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.done:
		require.NoError(t, err)
		r.done <- err // for the cleanup
	case <-time.After(wait):
		t.Fatal("Run did not return after its context was cancelled")
	}
}

// dbSessions counts the server's sessions on the fixture's database.
func (f fixture) dbSessions(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.ServerURL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", f.dbName).Scan(&n))
	return n
}

// settledSends waits until every send of the project is out of pending.
func (f fixture) settledSends(t *testing.T, project uuid.UUID, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		sends := f.db.Sends(t, project)
		if len(sends) != n {
			return false
		}
		for _, s := range sends {
			if s.State == "pending" {
				return false
			}
		}
		return true
	}, wait, 20*time.Millisecond, "want %d settled sends", n)
}

func TestAppSendsAlertsAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	project := f.db.Project(t, notifiertest.Project{})
	f.db.ChatChannel(t, project, f.receiver.URL())
	n := f.start(t)
	require.Positive(t, f.dbSessions(t), "New connects to the database")

	f.db.Produce(t, f.js, notifiertest.Recovered(project, "/x"))
	got := f.receiver.Wait(t, 1, wait)
	require.Contains(t, got[0].Text, "/x")
	require.Equal(t, "/services/T000/B000/secret-token", got[0].Path)
	f.settledSends(t, project, 1)

	n.stop(t)
	f.db.Pool.Close()
	// Only the test's own connection is left on NATS, none on PostgreSQL.
	require.Eventually(t, func() bool { return f.nats.NumClients() == 1 }, wait, 10*time.Millisecond)
	require.Eventually(t, func() bool { return f.dbSessions(t) == 0 }, wait, 10*time.Millisecond)

	// The alert was acknowledged before the connection closed.
	s, err := f.js.Stream(t.Context(), event.StreamAlerts)
	require.NoError(t, err)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs)
	require.NotContains(t, f.logs.String(), "secret-token", "the chat URL's token is never logged")
}

func TestStopLetsTheSendsInFlightFinishAndRecordsThem(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	project := f.db.Project(t, notifiertest.Project{})
	f.db.ChatChannel(t, project, f.receiver.URL())
	f.receiver.Hold()
	n := f.start(t)

	f.db.Produce(t, f.js, notifiertest.Recovered(project, "/in-flight"))
	f.receiver.Wait(t, 1, wait)
	n.cancel() // SIGTERM while the receiver holds the send
	f.receiver.Release()
	n.wait(t)

	sends := f.db.Sends(t, project)
	require.Equal(t, "sent", sends[0].State, "finished and recorded after the stop")
	require.Len(t, f.db.Attempts(t, project), 1)
}

func TestStopAbandonsASendThatOutlivesTheShutdownTimeout(t *testing.T) {
	t.Parallel()
	f := setup(t, map[string]string{"SUNDIAL_SHUTDOWN_TIMEOUT": "1s"})
	project := f.db.Project(t, notifiertest.Project{})
	channel := f.db.ChatChannel(t, project, f.receiver.URL())
	f.receiver.Hold()
	n := f.start(t)

	f.db.Produce(t, f.js, notifiertest.Recovered(project, "/stuck"))
	f.receiver.Wait(t, 1, wait)
	n.stop(t)

	sends := f.db.Sends(t, project)
	require.Equal(t, "pending", sends[0].State, "left to the lease")
	require.EqualValues(t, 1, sends[0].Attempts)
	require.NotNil(t, sends[0].LeaseExpiresAt)
	require.Empty(t, f.db.Attempts(t, project), "an abandoned try is not the channel's failure")
	require.Zero(t, f.db.ChannelRow(t, channel).ConsecutiveFailures)
}

func TestFailuresWithinTheGroupWaitAreOneMessage(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	project := f.db.Project(t, notifiertest.Project{GroupWait: 3 * time.Second, FollowupMin: time.Hour})
	channel := f.db.ChatChannel(t, project, f.receiver.URL())
	f.start(t)

	for i := range 50 {
		f.db.Produce(t, f.js, f.db.FailedHook(t, project, fmt.Sprintf("/fail/%d", i)))
	}

	got := f.receiver.Wait(t, 1, wait)
	f.settledSends(t, project, 1)
	require.Len(t, f.receiver.Requests(), 1, "one message for the 50 failures")
	require.Contains(t, got[0].Text, "and 40 more")
	groups := f.db.Groups(t, project)
	require.Len(t, groups, 1)
	require.EqualValues(t, 50, groups[0].AlertCount)
	require.Contains(t, got[0].Text, groups[0].ID.String(), "the message names its group, for deduplication")
	sends := f.db.Sends(t, project)
	require.Equal(t, "sent", sends[0].State)
	require.Equal(t, channel, *sends[0].ChannelID)
	require.Eventually(t, func() bool {
		notified, total := f.db.Notified(t, project)
		return notified == 50 && total == 50
	}, wait, 20*time.Millisecond, "every hook of the group is wasNotified")
	health := f.db.ChannelRow(t, channel)
	require.Zero(t, health.ConsecutiveFailures)
	require.NotNil(t, health.LastSuccessAt)
}

func TestFollowUpsBackOff(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	project := f.db.Project(t, notifiertest.Project{
		GroupWait: time.Second, FollowupMin: 2 * time.Second, FollowupMax: time.Hour,
	})
	f.db.ChatChannel(t, project, f.receiver.URL())
	f.start(t)

	// Each round: a failure right after the previous message went out.
	for round := 1; round <= 3; round++ {
		f.db.Produce(t, f.js, f.db.FailedHook(t, project, fmt.Sprintf("/round/%d", round)))
		f.receiver.Wait(t, round, wait)
		f.settledSends(t, project, round)
	}

	groups := f.db.Groups(t, project)
	require.Len(t, groups, 3)
	// The second waits the minimum after the first went out, the third
	// twice that after the second.
	for i, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second} {
		prev, next := groups[i-1], groups[i]
		require.NotNil(t, prev.ClosedAt)
		require.GreaterOrEqual(t, next.SendAt.Sub(*prev.ClosedAt), want-50*time.Millisecond,
			"group %d is due %s after group %d went out", i+1, want, i)
		require.Less(t, next.SendAt.Sub(*prev.ClosedAt), want+5*time.Second)
	}
	require.EqualValues(t, 8, f.db.Followup(t, project).FollowupSecs, "2 s, then 4 s, then 8 s")
	require.Len(t, f.receiver.Requests(), 3)
}

func TestRecoveryAndQuotaGoOutAtOnceAndQuotaReachesTheOwners(t *testing.T) {
	t.Parallel()
	smtp := smtpServer(t)
	f := setup(t, map[string]string{
		"SUNDIAL_NOTIFIER_SMTP_HOST": smtp.Host,
		"SUNDIAL_NOTIFIER_SMTP_PORT": fmt.Sprint(smtp.Port),
		"SUNDIAL_NOTIFIER_SMTP_TLS":  "none",
		"SUNDIAL_NOTIFIER_SMTP_FROM": "sundial@example.com",
	})
	// A group wait of an hour: only ungrouped alerts can go out in the test.
	project := f.db.Project(t, notifiertest.Project{
		GroupWait: time.Hour, Owners: []string{"owner@example.com", "cto@example.com"},
	})
	f.db.ChatChannel(t, project, f.receiver.URL())
	f.start(t)

	f.db.Produce(t, f.js, notifiertest.Recovered(project, "/back"))
	f.db.Produce(t, f.js, notifiertest.Quota(project, 75))

	got := f.receiver.Wait(t, 2, wait)
	f.settledSends(t, project, 3)
	texts := got[0].Text + got[1].Text
	require.Contains(t, texts, "/back")
	require.Contains(t, texts, "75")
	mail := smtp.Wait(t, 1)
	require.ElementsMatch(t, []string{"owner@example.com", "cto@example.com"}, mail[0].To)
	require.Equal(t, "sundial@example.com", mail[0].From)
	targets := []string{}
	for _, s := range f.db.Sends(t, project) {
		require.Equal(t, "sent", s.State)
		targets = append(targets, s.Target)
	}
	require.Contains(t, targets, "owners")
	require.Len(t, f.receiver.Requests(), 2)
}

func TestTheSameAlertTwiceIsOneAlertInOneGroup(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	project := f.db.Project(t, notifiertest.Project{GroupWait: time.Second})
	f.db.ChatChannel(t, project, f.receiver.URL())
	f.start(t)

	a := f.db.FailedHook(t, project, "/twice")
	f.db.Produce(t, f.js, a)
	notifiertest.Publish(t, f.js, a, 1) // a distinct NATS message of the same alert
	q := notifiertest.Quota(project, 100)
	notifiertest.Publish(t, f.js, q, 0) // not in the outbox: the notifier stores it
	notifiertest.Publish(t, f.js, q, 1)

	f.receiver.Wait(t, 2, wait)
	f.settledSends(t, project, 2)
	alerts := f.db.Alerts(t, project)
	require.Len(t, alerts, 2)
	groups := f.db.Groups(t, project)
	require.Len(t, groups, 2)
	for _, g := range groups {
		require.EqualValues(t, 1, g.AlertCount)
	}
	require.Len(t, f.receiver.Requests(), 2)
}

func TestAnAlertWhoseEventWasLostIsSwept(t *testing.T) {
	t.Parallel()
	f := setup(t, map[string]string{"SUNDIAL_NOTIFIER_SWEEP_AGE": "500ms"})
	project := f.db.Project(t, notifiertest.Project{})
	f.db.ChatChannel(t, project, f.receiver.URL())
	f.start(t)

	f.db.Store(t, notifiertest.Recovered(project, "/lost")) // no event

	got := f.receiver.Wait(t, 1, wait)
	require.Contains(t, got[0].Text, "/lost")
	// The send's log line is written once its answer is read, which may
	// be after the receiver has the message.
	require.Eventually(t, func() bool { return strings.Contains(f.logs.String(), `"via":"sweeper"`) }, wait, 10*time.Millisecond,
		"the send is logged as the sweeper's")
}

func TestAFailingChannelIsRetriedWithBackoffAndRecovers(t *testing.T) {
	t.Parallel()
	f := setup(t, map[string]string{
		"SUNDIAL_NOTIFIER_RETRY_MIN": "200ms",
		"SUNDIAL_NOTIFIER_RETRY_MAX": "1s",
	})
	project := f.db.Project(t, notifiertest.Project{})
	channel := f.db.ChatChannel(t, project, f.receiver.URL())
	f.receiver.SetStatus(http.StatusInternalServerError)
	f.start(t)

	f.db.Produce(t, f.js, notifiertest.Recovered(project, "/flaky"))
	require.Eventually(t, func() bool {
		return f.db.ChannelRow(t, channel).ConsecutiveFailures >= 3
	}, wait, 20*time.Millisecond, "the channel's failures are counted")
	failing := f.db.ChannelRow(t, channel)
	require.NotNil(t, failing.LastFailureAt)
	require.NotNil(t, failing.LastError)
	require.Contains(t, *failing.LastError, "500")
	require.NotContains(t, *failing.LastError, "secret-token")
	f.receiver.SetStatus(http.StatusOK)

	f.settledSends(t, project, 1)
	healthy := f.db.ChannelRow(t, channel)
	require.Zero(t, healthy.ConsecutiveFailures)
	require.NotNil(t, healthy.LastSuccessAt)
	attempts := f.db.Attempts(t, project)
	require.Len(t, f.receiver.Requests(), len(attempts), "every try is recorded")
	require.GreaterOrEqual(t, len(attempts), 4)
	for i, a := range attempts {
		require.EqualValues(t, i+1, a.Attempt)
		if i == len(attempts)-1 {
			require.Equal(t, "sent", a.Outcome)
			require.Nil(t, a.Error)
			continue
		}
		require.Equal(t, "failed", a.Outcome)
		require.Contains(t, *a.Error, "500")
		// The wait before the next try doubles from 200 ms up to 1 s.
		backoff := min(200*time.Millisecond<<i, time.Second)
		require.GreaterOrEqual(t, attempts[i+1].StartedAt.Sub(a.StartedAt), backoff-20*time.Millisecond, "try %d", i+2)
	}
	sends := f.db.Sends(t, project)
	require.Equal(t, "sent", sends[0].State)
	require.EqualValues(t, len(attempts), sends[0].Attempts)
}

func TestTwoNotifiersSendEachGroupOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	project := f.db.Project(t, notifiertest.Project{GroupWait: time.Second})
	f.db.ChatChannel(t, project, f.receiver.URL())
	f.start(t)
	f.start(t)

	const recoveries = 20
	for i := range recoveries {
		f.db.Produce(t, f.js, notifiertest.Recovered(project, fmt.Sprintf("/r/%d", i)))
	}
	for i := range 10 {
		f.db.Produce(t, f.js, f.db.FailedHook(t, project, fmt.Sprintf("/f/%d", i)))
	}

	f.receiver.Wait(t, recoveries+1, wait)
	f.settledSends(t, project, recoveries+1)
	groups := f.db.Groups(t, project)
	require.Len(t, groups, recoveries+1)
	seen := map[string]int{}
	for _, r := range f.receiver.Requests() {
		for _, g := range groups {
			if strings.Contains(r.Text, g.ID.String()) {
				seen[g.ID.String()]++
			}
		}
	}
	require.Len(t, seen, recoveries+1)
	for id, n := range seen {
		require.Equal(t, 1, n, "group %s", id)
	}
	for _, s := range f.db.Sends(t, project) {
		require.EqualValues(t, 1, s.Attempts)
	}
}

func TestNewFailsWithoutDatabase(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	cfg := f.cfg
	cfg.DatabaseURL = "postgres://postgres@127.0.0.1:1/sundial?sslmode=disable&connect_timeout=5"

	_, err := app.New(t.Context(), cfg, f.log)
	require.Error(t, err)
	require.Equal(t, 1, f.nats.NumClients(), "nothing but the test is left connected")
}

func TestNewFailsWithoutNATSAndClosesTheDatabase(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	cfg := f.cfg
	cfg.NATSURL = "nats://127.0.0.1:1"
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()

	_, err := app.New(ctx, cfg, f.log)
	require.Error(t, err)
	// The fixture's own pool may hold a session: none may be the notifier's.
	f.db.Pool.Close()
	require.Eventually(t, func() bool { return f.dbSessions(t) == 0 }, wait, 10*time.Millisecond,
		"the pool New opened is closed")
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	_, err := app.New(t.Context(), app.Config{}, slog.New(slog.DiscardHandler))
	require.Error(t, err)
}

// smtpServer is the operator's SMTP server for owner e-mails.
func smtpServer(t *testing.T) *smtptest.Server {
	t.Helper()
	return smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSNone})
}

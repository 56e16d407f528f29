package asyncanswer_test

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/gateway/internal/asyncanswer"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

const domain = "example.com"

// bundle is a Service publishing on a real NATS, on a real database. Hooks
// are put in the states the scheduler would give them with the store's
// ...ForTest queries (the scheduler is another module).
type bundle struct {
	t       *testing.T
	svc     *asyncanswer.Service
	q       *store.Queries
	tq      *storetest.Queries
	js      jetstream.JetStream
	project uuid.UUID
	secret  []byte
	logs    *logtest.Buffer
}

// setup starts NATS, with the streams unless bare, and a Service on a new
// project's database.
func setup(t *testing.T, bare bool) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, "Acme", domain)
	require.NoError(t, err)
	q := store.New(pool)
	secret, err := storetest.New(pool).AsyncSecretForTest(t.Context(), created.ID)
	require.NoError(t, err)
	_, js := natstest.Start(t, natstest.Options{}).Connect(t)
	if !bare {
		require.NoError(t, event.EnsureStreams(t.Context(), js))
	}
	logs := &logtest.Buffer{}
	svc := asyncanswer.NewService(pool, asyncanswer.WithAlerts(bus.NewPublisher(js), slog.New(slog.NewJSONHandler(logs, nil))))
	return bundle{t: t, svc: svc, q: q, tq: storetest.New(pool), js: js, project: created.ID, secret: secret, logs: logs}
}

// waiting returns a hook to path whose delivery under the returned lease was
// answered 202 and applied, as the scheduler applies it.
func (b bundle) waiting(path string) (uuid.UUID, int64) {
	b.t.Helper()
	now := time.Now()
	h, err := b.q.InsertHook(b.t.Context(), store.InsertHookParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: b.project, Path: path, Domain: domain,
		Data: json.RawMessage(`{}`), PostAt: &now,
	})
	require.NoError(b.t, err)
	lease, err := b.tq.LeaseHookForTest(b.t.Context(), h.ID)
	require.NoError(b.t, err)
	_, err = b.q.StartWaitBeforeResult(b.t.Context(), store.StartWaitBeforeResultParams{HookID: h.ID, TimeoutSeconds: 300})
	require.NoError(b.t, err)
	return h.ID, lease
}

func (b bundle) answer(kind asyncanswer.Kind, id uuid.UUID, lease int64) string {
	b.t.Helper()
	status, err := b.svc.Apply(b.t.Context(), asyncanswer.Answer{
		Kind: kind, HookID: id, Lease: lease, Token: asyncurl.Token(b.secret, id, lease),
	})
	require.NoError(b.t, err)
	return status
}

// failing marks the endpoint failing, as the scheduler does when hooks to it
// run out of retries, and returns since when.
func (b bundle) failing(path string, failedHooks int32) time.Time {
	b.t.Helper()
	since, err := b.tq.MarkEndpointFailingForTest(b.t.Context(), storetest.MarkEndpointFailingForTestParams{
		ProjectID: b.project, Domain: domain, Path: path, FailedHooks: failedHooks,
	})
	require.NoError(b.t, err)
	return since
}

func (b bundle) failingPaths() []string {
	b.t.Helper()
	rows, err := b.tq.ListFailingEndpointsForTest(b.t.Context(), b.project)
	require.NoError(b.t, err)
	paths := []string{}
	for _, r := range rows {
		paths = append(paths, r.Path)
	}
	return paths
}

func (b bundle) alerts() []storetest.ListAlertsForTestRow {
	b.t.Helper()
	rows, err := b.tq.ListAlertsForTest(b.t.Context(), b.project)
	require.NoError(b.t, err)
	return rows
}

// published returns the alert events in the stream, oldest first.
func (b bundle) published() []*jetstream.RawStreamMsg {
	b.t.Helper()
	s, err := b.js.Stream(b.t.Context(), event.StreamAlerts)
	require.NoError(b.t, err)
	info, err := s.Info(b.t.Context())
	require.NoError(b.t, err)
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		msg, err := s.GetMsg(b.t.Context(), seq)
		require.NoError(b.t, err)
		out = append(out, msg)
	}
	return out
}

func decode(t *testing.T, body []byte) *eventv1.Alert {
	t.Helper()
	var a eventv1.Alert
	require.NoError(t, proto.Unmarshal(body, &a))
	return &a
}

func TestAckRecoversTheFailingEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	since := b.failing("/p", 3)
	b.failing("/other", 1)
	id, lease := b.waiting("/p")
	before := time.Now()

	require.Equal(t, asyncanswer.StatusCompleted, b.answer(asyncanswer.Ack, id, lease))
	require.Equal(t, []string{"/other"}, b.failingPaths(), "only the acked hook's endpoint recovers")
	alerts := b.alerts()
	require.Len(t, alerts, 1)
	row := alerts[0]
	wantID := event.EndpointRecoveredAlertID(b.project, domain, "/p", since)
	require.Equal(t, wantID, row.ID)
	require.Equal(t, "endpoint.recovered", row.Kind)
	got := decode(t, row.Body)
	require.Equal(t, wantID, got.GetAlertId())
	require.Equal(t, eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED, got.GetKind())
	require.Equal(t, b.project.String(), got.GetProjectId())
	require.Equal(t, id.String(), got.GetHookId())
	require.Equal(t, domain, got.GetDomain())
	require.Equal(t, "/p", got.GetPath())
	require.Equal(t, int32(3), got.GetAttempts(), "the hooks that failed in the spell")
	require.True(t, row.OccurredAt.Equal(got.GetOccurredAt().AsTime()))
	require.WithinDuration(t, before, row.OccurredAt, time.Minute)

	msgs := b.published()
	require.Len(t, msgs, 1)
	require.Equal(t, event.SubjectAlert, msgs[0].Subject)
	require.Equal(t, event.MsgID(event.KindAlert, wantID, 0), msgs[0].Header.Get(jetstream.MsgIDHeader))
	require.True(t, proto.Equal(got, decode(t, msgs[0].Data)), "the event carries the stored alert")
	require.Empty(t, b.logs.String())

	// The endpoint fails again (a new spell); a repeated ack of the same
	// delivery is not a new success and ends nothing.
	b.failing("/p", 1)
	require.Equal(t, asyncanswer.StatusCompleted, b.answer(asyncanswer.Ack, id, lease))
	require.Equal(t, []string{"/other", "/p"}, b.failingPaths())
	require.Len(t, b.alerts(), 1)
	require.Len(t, b.published(), 1)

	// The next ack on it ends the new spell: another alert.
	next, nextLease := b.waiting("/p")
	require.Equal(t, asyncanswer.StatusCompleted, b.answer(asyncanswer.Ack, next, nextLease))
	require.Equal(t, []string{"/other"}, b.failingPaths())
	require.Len(t, b.alerts(), 2)
	require.Len(t, b.published(), 2)
}

func TestAnswersThatRecoverNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.failing("/other", 2)

	id, lease := b.waiting("/p")
	require.Equal(t, asyncanswer.StatusCompleted, b.answer(asyncanswer.Ack, id, lease), "an ack on another endpoint")
	nacked, nackLease := b.waiting("/other")
	require.Equal(t, asyncanswer.StatusNacked, b.answer(asyncanswer.Nack, nacked, nackLease), "a nack on the failing one")

	require.Equal(t, []string{"/other"}, b.failingPaths())
	require.Empty(t, b.alerts())
	require.Empty(t, b.published())
}

func TestAnUnpublishedRecoveryStaysInTheOutbox(t *testing.T) {
	t.Parallel()
	b := setup(t, true) // no stream takes the event
	since := b.failing("/p", 1)
	id, lease := b.waiting("/p")

	require.Equal(t, asyncanswer.StatusCompleted, b.answer(asyncanswer.Ack, id, lease), "the ack is settled all the same")
	require.Empty(t, b.failingPaths())
	alerts := b.alerts()
	require.Len(t, alerts, 1)
	wantID := event.EndpointRecoveredAlertID(b.project, domain, "/p", since)
	require.Equal(t, wantID, alerts[0].ID, "the notifier's sweeper takes it from here")
	logs := b.logs.String()
	require.Contains(t, logs, "endpoint recovered alert not published")
	require.Contains(t, logs, wantID)
}

package result_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// applyPath applies one result in one of the messages that carry results.
type applyPath struct {
	name  string
	apply func(t *testing.T, b bundle, r *eventv1.AttemptResult)
}

var applyPaths = []applyPath{
	{"single", func(t *testing.T, b bundle, r *eventv1.AttemptResult) { require.NoError(t, b.handle(t, r)) }},
	{"batch message", func(t *testing.T, b bundle, r *eventv1.AttemptResult) {
		require.NoError(t, b.batcher.Handle(context.Background(), batchDelivery(t, 1, r)))
	}},
}

// leasedTo creates due hooks to path in project and claims them, as the
// scheduler does before delivering them.
func (b bundle) leasedTo(t *testing.T, project uuid.UUID, path string, n int) []storetest.Hook {
	t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: path, DueIn: -time.Second}).ID
	}
	c := b.claimer(t, time.Minute)
	claimed := 0
	for claimed < n {
		got, err := c.ClaimOnce(context.Background())
		require.NoError(t, err)
		require.Positive(t, got, "the hooks are due")
		claimed += got
	}
	hooks := make([]storetest.Hook, n)
	for i, id := range ids {
		hooks[i] = fixture.Get(t, b.q, id)
		require.NotNil(t, hooks[i].LeaseExpiresAt)
	}
	return hooks
}

func (b bundle) alertRows(t *testing.T, project uuid.UUID) []storetest.Alert {
	t.Helper()
	rows, err := storetest.New(b.pool).ListAlertsForTest(context.Background(), project)
	require.NoError(t, err)
	return rows
}

func (b bundle) failingEndpoints(t *testing.T, project uuid.UUID) []storetest.FailingEndpoint {
	t.Helper()
	rows, err := storetest.New(b.pool).ListFailingEndpointsForTest(context.Background(), project)
	require.NoError(t, err)
	return rows
}

// alertEvents are the alerts published on NATS, by alert id; each must have
// been stored once.
func (b bundle) alertEvents(t *testing.T) map[string]*eventv1.Alert {
	t.Helper()
	out := map[string]*eventv1.Alert{}
	for _, msg := range natstest.StreamMessages(t, b.js, event.StreamAlerts) {
		a := fixture.Alert(t, msg)
		require.NotContains(t, out, a.GetAlertId(), "one event per alert")
		require.Equal(t, event.MsgID(event.KindAlert, a.GetAlertId(), 0), fixture.MsgID(msg))
		out[a.GetAlertId()] = a
	}
	return out
}

// body decodes an alerts row's body.
func body(t *testing.T, row storetest.Alert) *eventv1.Alert {
	t.Helper()
	var a eventv1.Alert
	require.NoError(t, proto.Unmarshal(row.Body, &a))
	return &a
}

func TestEndpointIDsAreDeterministic(t *testing.T) {
	t.Parallel()
	project := uuid.MustParse("0190b4c1-0000-7000-8000-000000000001")
	since := time.Date(2026, 11, 21, 12, 0, 0, 123456000, time.UTC)
	sum := sha256.Sum256([]byte("api.example.com /hooks/a"))
	want := "endpoint.recovered:" + project.String() + ":" + strconv.FormatInt(since.UnixNano(), 10) + ":" +
		hex.EncodeToString(sum[:])[:16]
	require.Equal(t, want, event.EndpointRecoveredAlertID(project, "api.example.com", "/hooks/a", since))
	require.NotEqual(t, want, event.EndpointRecoveredAlertID(project, "api.example.com", "/hooks/b", since))
	require.NotEqual(t, want, event.EndpointRecoveredAlertID(project, "api.example.com", "/hooks/a", since.Add(time.Microsecond)),
		"the next failing spell of the endpoint is another alert")
}

// TestFailureAndRecoveryAlerts follows one endpoint through two final
// failures and a recovery, on each path of the applier.
func TestFailureAndRecoveryAlerts(t *testing.T) {
	t.Parallel()
	for _, path := range applyPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			project := fixture.Project(t, b.q, domain, noRetries)
			hooks := b.leasedTo(t, project, "/failing", 3)
			other := b.leasedTo(t, project, "/fine", 1)[0]

			// A final failure: the alert is in the outbox, the endpoint failing.
			first := resultFor(hooks[0], eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")
			path.apply(t, b, first)
			failedAt := fixture.Get(t, b.q, hooks[0].ID).UpdatedAt
			rows := b.alertRows(t, project)
			require.Len(t, rows, 1)
			alertID := event.HookFailedAlertID(hooks[0].ID, hooks[0].LeaseSeq)
			require.Equal(t, alertID, rows[0].ID)
			require.Equal(t, "hook.failed", rows[0].Kind)
			require.True(t, failedAt.Equal(rows[0].OccurredAt))
			require.Nil(t, rows[0].GroupID)
			failed := body(t, rows[0])
			require.Equal(t, eventv1.AlertKind_ALERT_KIND_HOOK_FAILED, failed.GetKind())
			require.Equal(t, alertID, failed.GetAlertId())
			require.Equal(t, project.String(), failed.GetProjectId())
			require.Equal(t, hooks[0].ID.String(), failed.GetHookId())
			require.Equal(t, domain, failed.GetDomain())
			require.Equal(t, "/failing", failed.GetPath())
			require.Equal(t, "HTTP 500", failed.GetError())
			require.EqualValues(t, 1, failed.GetAttempts())
			require.True(t, failedAt.Equal(failed.GetOccurredAt().AsTime()))
			events := b.alertEvents(t)
			require.Len(t, events, 1)
			require.True(t, proto.Equal(failed, events[alertID]), "the event is the outbox row")

			endpoints := b.failingEndpoints(t, project)
			require.Len(t, endpoints, 1)
			require.Equal(t, storetest.FailingEndpoint{ProjectID: project, Domain: domain, Path: "/failing",
				FailingSince: endpoints[0].FailingSince, FailedHooks: 1}, endpoints[0])
			require.True(t, failedAt.Equal(endpoints[0].FailingSince), "failing since the failure's transaction")

			// The same result again is stale: no second alert, no second count.
			path.apply(t, b, first)
			require.Len(t, b.alertRows(t, project), 1)
			require.Len(t, b.alertEvents(t), 1)
			require.EqualValues(t, 1, b.failingEndpoints(t, project)[0].FailedHooks)

			// A second hook to the endpoint fails: it counts, the spell goes on.
			path.apply(t, b, resultFor(hooks[1], eventv1.Outcome_OUTCOME_FAILURE, 502, "HTTP 502"))
			require.Len(t, b.alertRows(t, project), 2)
			endpoints = b.failingEndpoints(t, project)
			require.Len(t, endpoints, 1)
			require.EqualValues(t, 2, endpoints[0].FailedHooks)
			require.True(t, failedAt.Equal(endpoints[0].FailingSince))

			// A success on another endpoint changes nothing.
			path.apply(t, b, resultFor(other, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
			require.Len(t, b.alertRows(t, project), 2)
			require.Len(t, b.alertEvents(t), 2)
			require.Len(t, b.failingEndpoints(t, project), 1)

			// A success on the failing endpoint recovers it, once.
			success := resultFor(hooks[2], eventv1.Outcome_OUTCOME_SUCCESS, 200, "")
			path.apply(t, b, success)
			path.apply(t, b, success)
			recoveredAt := fixture.Get(t, b.q, hooks[2].ID).UpdatedAt
			require.Empty(t, b.failingEndpoints(t, project))
			rows = b.alertRows(t, project)
			require.Len(t, rows, 3)
			var recovered []storetest.Alert
			for _, row := range rows {
				if row.Kind == "endpoint.recovered" {
					recovered = append(recovered, row)
				}
			}
			require.Len(t, recovered, 1)
			recoveredID := event.EndpointRecoveredAlertID(project, domain, "/failing", endpoints[0].FailingSince)
			require.Equal(t, recoveredID, recovered[0].ID)
			require.True(t, recoveredAt.Equal(recovered[0].OccurredAt))
			alert := body(t, recovered[0])
			require.Equal(t, eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED, alert.GetKind())
			require.Equal(t, recoveredID, alert.GetAlertId())
			require.Equal(t, project.String(), alert.GetProjectId())
			require.Equal(t, hooks[2].ID.String(), alert.GetHookId(), "the hook that succeeded")
			require.Equal(t, domain, alert.GetDomain())
			require.Equal(t, "/failing", alert.GetPath())
			require.EqualValues(t, 2, alert.GetAttempts(), "the hooks that failed meanwhile")
			require.Empty(t, alert.GetError())
			require.True(t, recoveredAt.Equal(alert.GetOccurredAt().AsTime()))
			events = b.alertEvents(t)
			require.Len(t, events, 3)
			require.True(t, proto.Equal(alert, events[recoveredID]))

			// The endpoint works: the next success says nothing.
			next := b.leasedTo(t, project, "/failing", 1)[0]
			path.apply(t, b, resultFor(next, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
			require.Len(t, b.alertRows(t, project), 3)
			require.Len(t, b.alertEvents(t), 3)
		})
	}
}

func TestRetriedFailureDoesNotMakeAnEndpointFailing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, fixed30)
	hook := b.leasedTo(t, project, "/flaky", 1)[0]
	require.NoError(t, b.handle(t, resultFor(hook, eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503")))
	require.Equal(t, "retry", fixture.Get(t, b.q, hook.ID).Status)
	require.Empty(t, b.failingEndpoints(t, project))
	require.Empty(t, b.alertRows(t, project))
	require.Zero(t, fixture.CountMessages(b.js, event.StreamAlerts))
}

// TestBatchCountsAndRecoversEndpointsTogether applies, in single batches,
// several final failures to one endpoint, then several successes to it: set
// statements must count every failure and announce one recovery.
func TestBatchCountsAndRecoversEndpointsTogether(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, noRetries)
	failing := b.leasedTo(t, project, "/a", 4)
	otherFailing := b.leasedTo(t, project, "/b", 1)
	var failures []*eventv1.AttemptResult
	for _, h := range append(failing, otherFailing...) {
		failures = append(failures, resultFor(h, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500"))
	}
	batcher := runBatcher(t, b.applier, exactBatch(len(failures)))
	for i, err := range handleAll(t, batcher.Handle, failures...) {
		require.NoError(t, err, "result %d", i)
	}
	endpoints := b.failingEndpoints(t, project)
	require.Len(t, endpoints, 2)
	require.Equal(t, "/a", endpoints[0].Path)
	require.EqualValues(t, 4, endpoints[0].FailedHooks)
	require.Equal(t, "/b", endpoints[1].Path)
	require.EqualValues(t, 1, endpoints[1].FailedHooks)
	rows := b.alertRows(t, project)
	require.Len(t, rows, 5)
	for _, row := range rows {
		require.Equal(t, "hook.failed", row.Kind)
	}
	require.Len(t, b.alertEvents(t), 5)

	// Three successes to /a, one to a working endpoint, one duplicate.
	succeeding := b.leasedTo(t, project, "/a", 3)
	working := b.leasedTo(t, project, "/c", 1)[0]
	var successes []*eventv1.AttemptResult
	for _, h := range append(succeeding, working) {
		successes = append(successes, resultFor(h, eventv1.Outcome_OUTCOME_SUCCESS, 200, ""))
	}
	successes = append(successes, successes[0])
	batcher = runBatcher(t, b.applier, exactBatch(len(successes)))
	for i, err := range handleAll(t, batcher.Handle, successes...) {
		require.NoError(t, err, "result %d", i)
	}
	endpoints = b.failingEndpoints(t, project)
	require.Len(t, endpoints, 1, "/b still fails")
	require.Equal(t, "/b", endpoints[0].Path)
	var recovered []*eventv1.Alert
	for _, row := range b.alertRows(t, project) {
		if row.Kind == "endpoint.recovered" {
			recovered = append(recovered, body(t, row))
		}
	}
	require.Len(t, recovered, 1)
	require.Equal(t, "/a", recovered[0].GetPath())
	require.EqualValues(t, 4, recovered[0].GetAttempts())
	succeeded := map[string]bool{}
	for _, h := range succeeding {
		succeeded[h.ID.String()] = true
	}
	require.True(t, succeeded[recovered[0].GetHookId()], "names a hook that succeeded on the endpoint")
	events := b.alertEvents(t)
	require.Len(t, events, 6)
	require.True(t, proto.Equal(recovered[0], events[recovered[0].GetAlertId()]))
}

func TestEndedAsyncWaitThatFailsTheHookAlerts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, noRetries)
	hook := b.accepted(t, b.leasedTo(t, project, "/async", 1)[0], 0)
	b.nack(t, hook)
	require.True(t, b.endWait(t, hook.ID))
	require.Equal(t, "failed", fixture.Get(t, b.q, hook.ID).Status)

	rows := b.alertRows(t, project)
	require.Len(t, rows, 1)
	alert := body(t, rows[0])
	require.Equal(t, event.HookFailedAlertID(hook.ID, hook.LeaseSeq), alert.GetAlertId())
	require.Equal(t, result.ErrNacked, alert.GetError())
	require.Equal(t, domain, alert.GetDomain())
	require.Equal(t, "/async", alert.GetPath())
	endpoints := b.failingEndpoints(t, project)
	require.Len(t, endpoints, 1)
	require.Equal(t, "/async", endpoints[0].Path)
	require.Len(t, b.alertEvents(t), 1)
}

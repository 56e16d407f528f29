package result_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/scheduler/internal/breaker"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
)

// failurePolicy sets the project's failure policy as the gateway stores it.
func (b bundle) failurePolicy(t *testing.T, project uuid.UUID, policy string) {
	t.Helper()
	n, err := b.q.SetFailurePolicyForTest(context.Background(), storetest.SetFailurePolicyForTestParams{
		ID: project, FailurePolicy: []byte(policy)})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// classed is a failed result of class c, as a dispatcher reports it.
func classed(h storetest.Hook, status int32, errText string, c eventv1.FailureClass) *eventv1.AttemptResult {
	r := resultFor(h, eventv1.Outcome_OUTCOME_FAILURE, status, errText)
	r.FailureClass = c
	return r
}

func TestEveryFailureIsRetriedByDefaultAndKeepsItsClass(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, manyRetries)
	hooks := b.leasedTo(t, project, "/gone", 2)
	require.NoError(t, b.handle(t, classed(hooks[0], 410, "HTTP 410", eventv1.FailureClass_FAILURE_CLASS_GONE)))
	got := fixture.Get(t, b.q, hooks[0].ID)
	require.Equal(t, "retry", got.Status, "without a policy a 410 is retried, as before")
	require.Equal(t, "410", *got.FailureClass)
	attempts, err := b.q.ListAttemptsForTest(context.Background(), hooks[0].ID)
	require.NoError(t, err)
	require.Equal(t, "410", *attempts[0].FailureClass)

	// A result of a dispatcher that did not classify: the status decides.
	require.NoError(t, b.handle(t, resultFor(hooks[1], eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503")))
	require.Equal(t, "5xx", *fixture.Get(t, b.q, hooks[1].ID).FailureClass)
}

func TestAFailPolicyFailsTheHookAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, manyRetries)
	b.failurePolicy(t, project, `{"4xx": "fail"}`)
	hooks := b.leasedTo(t, project, "/missing", 2)
	require.NoError(t, b.handle(t, classed(hooks[0], 404, "HTTP 404", eventv1.FailureClass_FAILURE_CLASS_CLIENT_ERROR)))
	require.NoError(t, b.handle(t, classed(hooks[1], 500, "HTTP 500", eventv1.FailureClass_FAILURE_CLASS_SERVER_ERROR)))

	failed := fixture.Get(t, b.q, hooks[0].ID)
	require.Equal(t, "failed", failed.Status, "fail: no retry, with ten retries left")
	require.EqualValues(t, 1, failed.Attempts)
	require.Nil(t, failed.RunAt)
	require.Equal(t, "4xx", *failed.FailureClass)
	require.Equal(t, "retry", fixture.Get(t, b.q, hooks[1].ID).Status, "a class the policy leaves out is retried")

	alerts := b.alertsOfKind(t, project, event.AlertKindHookFailed)
	require.Len(t, alerts, 1)
	require.Equal(t, hooks[0].ID.String(), alerts[0].GetHookId())
	require.Equal(t, eventv1.FailureClass_FAILURE_CLASS_CLIENT_ERROR, alerts[0].GetFailureClass())
	_, err := b.q.GetBreakerForTest(context.Background(), storetest.GetBreakerForTestParams{ProjectID: project, Domain: domain})
	require.NoError(t, err, "the 500 made a row")
	require.Nil(t, b.breakerRow(t, project).PausedAt, "fail pauses nothing")
}

func TestAPausePolicyFailsTheHookAndPausesTheEndpointUntilResumed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, manyRetries)
	b.failurePolicy(t, project, `{"410": "pause"}`)
	hooks := b.leasedTo(t, project, "/gone", 1)
	require.NoError(t, b.handle(t, classed(hooks[0], 410, "HTTP 410", eventv1.FailureClass_FAILURE_CLASS_GONE)))

	got := fixture.Get(t, b.q, hooks[0].ID)
	require.Equal(t, "failed", got.Status)
	require.EqualValues(t, 1, got.Attempts)
	row := b.breakerRow(t, project)
	require.NotNil(t, row.PausedAt, "one 410 pauses the endpoint")
	require.Equal(t, breaker.CausePolicy, *row.PauseCause)
	require.Contains(t, *row.PauseReason, "410")
	require.Greater(t, time.Until(*row.PausedUntil), 50*365*24*time.Hour, "until resumed: no probe")
	paused := b.alertsOfKind(t, project, event.AlertKindEndpointPaused)
	require.Len(t, paused, 1)
	require.Equal(t, eventv1.FailureClass_FAILURE_CLASS_GONE, paused[0].GetFailureClass())
	require.Len(t, b.alertsOfKind(t, project, event.AlertKindHookFailed), 1)

	// The endpoint's other hooks wait, without attempts, until it is
	// resumed; then they go.
	waiting := fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: "/other", DueIn: -time.Second})
	require.Zero(t, b.claimAll(t))
	require.EqualValues(t, 0, fixture.Get(t, b.q, waiting.ID).Attempts)
	_, err := b.q.RequestResumeForTest(context.Background(), storetest.RequestResumeForTestParams{ProjectID: project, Domain: domain})
	require.NoError(t, err)
	n, err := b.applier.ApplyResumes(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Nil(t, b.breakerRow(t, project).PausedAt)
	require.Equal(t, 1, b.claimAll(t), "the held hook is due at once")
}

func TestAPausePolicyOnAsyncNacks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, manyRetries)
	b.failurePolicy(t, project, `{"nack": "pause"}`)
	hook := b.leasedTo(t, project, "/async", 1)[0]
	b.nack(t, b.accepted(t, hook, 0))
	require.True(t, b.endWait(t, hook.ID))

	got := fixture.Get(t, b.q, hook.ID)
	require.Equal(t, "failed", got.Status)
	require.Equal(t, "nack", *got.FailureClass)
	require.Equal(t, "nack", *fixture.Attempts(t, b.q, hook.ID)[0].FailureClass)
	require.Equal(t, breaker.CausePolicy, *b.breakerRow(t, project).PauseCause)
}

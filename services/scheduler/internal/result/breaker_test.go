package result_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/breaker"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
)

// manyRetries lets a hook fail often without failing for good.
var manyRetries = retry.Policy{MinRetries: 10, DelaySecs: 30, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600}

// tripAfter3 opens after three failures in a row, however fast.
var tripAfter3 = breaker.Policy{Failures: 3, MinSpan: 0, Cooldown: 30 * time.Second, MaxCooldown: 10 * time.Minute,
	AlertRetryAfter: time.Minute}

func (b bundle) breakerRow(t *testing.T, project uuid.UUID) storetest.EndpointBreaker {
	t.Helper()
	row, err := b.q.GetBreakerForTest(context.Background(), storetest.GetBreakerForTestParams{ProjectID: project, Domain: domain})
	require.NoError(t, err)
	return row
}

func (b bundle) alertsOfKind(t *testing.T, project uuid.UUID, kind string) []*eventv1.Alert {
	t.Helper()
	var out []*eventv1.Alert
	for _, row := range b.alertRows(t, project) {
		if row.Kind == kind {
			out = append(out, body(t, row))
		}
	}
	return out
}

// claimAll runs one claim and returns how many hooks it leased.
func (b bundle) claimAll(t *testing.T) int {
	t.Helper()
	n, err := b.claimer(t, time.Minute).ClaimOnce(context.Background())
	require.NoError(t, err)
	return n
}

func TestFailuresPauseTheEndpointAndItsHooksWaitWithoutAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.applier.SetBreakerPolicy(tripAfter3))
	project := fixture.Project(t, b.q, domain, manyRetries)
	for _, h := range b.leasedTo(t, project, "/orders/1", 3) {
		require.NoError(t, b.handle(t, resultFor(h, eventv1.Outcome_OUTCOME_FAILURE, 0, "timeout after 10s")))
	}
	row := b.breakerRow(t, project)
	require.NotNil(t, row.PausedAt, "three failures in a row open the breaker")
	require.Equal(t, breaker.CauseFailures, *row.PauseCause)
	require.Contains(t, *row.PauseReason, "timeout after 10s")
	require.EqualValues(t, 3, row.ConsecutiveFailures)
	require.WithinDuration(t, row.PausedAt.Add(30*time.Second), *row.PausedUntil, time.Millisecond)
	paused := b.alertsOfKind(t, project, event.AlertKindEndpointPaused)
	require.Len(t, paused, 1)
	require.Equal(t, event.EndpointPausedAlertID(project, domain, *row.PausedAt), paused[0].GetAlertId())
	require.Equal(t, domain, paused[0].GetDomain())
	require.Contains(t, b.alertEvents(t), paused[0].GetAlertId(), "published after the commit")

	// Hooks due meanwhile, to any path of the domain, are not leased: they
	// move to the pause's end with their attempts untouched.
	waiting := []storetest.Hook{
		fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: "/orders/2", DueIn: -time.Second}),
		fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: "/orders/3", DueIn: -2 * time.Second}),
	}
	require.Zero(t, b.claimAll(t))
	for _, w := range waiting {
		got := fixture.Get(t, b.q, w.ID)
		require.Equal(t, "pending", got.Status)
		require.Zero(t, got.Attempts)
		require.Nil(t, got.LeaseExpiresAt)
		require.Equal(t, w.LeaseSeq, got.LeaseSeq)
		require.WithinDuration(t, *row.PausedUntil, *got.RunAt, time.Millisecond)
		require.Empty(t, fixture.Attempts(t, b.q, w.ID))
	}

	// When the pause ends, one hook goes as the probe; the other waits for it.
	n, err := b.q.EndPauseForTest(context.Background(), storetest.EndPauseForTestParams{ProjectID: project, Domain: domain})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	makeDue(t, b, waiting)
	require.Equal(t, 1, b.claimAll(t))
	row = b.breakerRow(t, project)
	require.NotNil(t, row.ProbeHookID)
	probe := fixture.Get(t, b.q, *row.ProbeHookID)
	require.NotNil(t, probe.LeaseExpiresAt, "the probe is an ordinary delivery")
	other := waiting[0]
	if other.ID == probe.ID {
		other = waiting[1]
	}
	held := fixture.Get(t, b.q, other.ID)
	require.Nil(t, held.LeaseExpiresAt)
	require.WithinDuration(t, *row.PausedUntil, *held.RunAt, time.Millisecond)

	// A healthy probe closes the breaker and releases the hook it held.
	require.NoError(t, b.handle(t, resultFor(probe, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")))
	row = b.breakerRow(t, project)
	require.Nil(t, row.PausedAt)
	require.Zero(t, row.ConsecutiveFailures)
	require.False(t, fixture.Get(t, b.q, other.ID).RunAt.After(fixture.DBNow(t, b.q)), "released")
	require.Equal(t, 1, b.claimAll(t))
	recovered := b.alertsOfKind(t, project, event.AlertKindEndpointRecovered)
	require.Len(t, recovered, 1, "an announced pause is announced over")
	require.Equal(t, domain, recovered[0].GetDomain())
	require.Empty(t, recovered[0].GetPath())
	require.Len(t, b.alertsOfKind(t, project, event.AlertKindEndpointPaused), 1, "one alert per pause")
}

// makeDue brings the hooks' run_at to now, as if the pause had been waited out.
func makeDue(t *testing.T, b bundle, hooks []storetest.Hook) {
	t.Helper()
	for _, h := range hooks {
		n, err := b.q.RunNowForTest(context.Background(), h.ID)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
	}
}

func TestFailuresThatSpareThePathThatAnsweredLeaveTheDomainActive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	onePath := tripAfter3
	onePath.PathWindow = time.Minute
	require.NoError(t, b.applier.SetBreakerPolicy(onePath))
	project := fixture.Project(t, b.q, domain, manyRetries)
	hang := b.leasedTo(t, project, "/hang", 4)
	require.NoError(t, b.handle(t, resultFor(hang[0], eventv1.Outcome_OUTCOME_FAILURE, 0, "timeout after 10s")))
	ok := b.leasedTo(t, project, "/ok", 1)
	require.NoError(t, b.handle(t, resultFor(ok[0], eventv1.Outcome_OUTCOME_SUCCESS, 200, "")))
	for _, h := range hang[1:] {
		require.NoError(t, b.handle(t, resultFor(h, eventv1.Outcome_OUTCOME_FAILURE, 0, "timeout after 10s")))
	}
	row := b.breakerRow(t, project)
	require.Nil(t, row.PausedAt, "/ok answered just before: /hang's run is its own")
	require.EqualValues(t, 3, row.ConsecutiveFailures)
	require.Equal(t, "/ok", *row.HealthyPath)

	// The path that answered failing too makes the run the server's.
	again := b.leasedTo(t, project, "/ok", 1)
	require.NoError(t, b.handle(t, resultFor(again[0], eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503")))
	row = b.breakerRow(t, project)
	require.NotNil(t, row.PausedAt)
	require.True(t, row.HealthyPathFailing)
}

func TestAFailedProbeReopensForLonger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.applier.SetBreakerPolicy(tripAfter3))
	project := fixture.Project(t, b.q, domain, manyRetries)
	for _, h := range b.leasedTo(t, project, "/x", 3) {
		require.NoError(t, b.handle(t, resultFor(h, eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503")))
	}
	first := b.breakerRow(t, project)
	_, err := b.q.EndPauseForTest(context.Background(), storetest.EndPauseForTestParams{ProjectID: project, Domain: domain})
	require.NoError(t, err)
	probe := fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: "/x", DueIn: -time.Second})
	require.Equal(t, 1, b.claimAll(t))
	probe = fixture.Get(t, b.q, probe.ID)
	require.NoError(t, b.handle(t, resultFor(probe, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")))
	row := b.breakerRow(t, project)
	require.Equal(t, *first.PausedAt, *row.PausedAt, "the same pause")
	require.EqualValues(t, 60, row.CooldownSecs, "the cooldown doubles")
	require.Nil(t, row.ProbeHookID)
	require.Len(t, b.alertsOfKind(t, project, event.AlertKindEndpointPaused), 1, "one alert per pause")
}

func TestRetryAfterPausesTheEndpointAndDelaysTheRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, manyRetries)
	hooks := b.leasedTo(t, project, "/limited", 1)
	before := fixture.DBNow(t, b.q)
	r := resultFor(hooks[0], eventv1.Outcome_OUTCOME_FAILURE, 429, "HTTP 429")
	r.RetryAfter = durationpb.New(2 * time.Minute)
	require.NoError(t, b.handle(t, r))

	row := b.breakerRow(t, project)
	require.Equal(t, breaker.CauseRetryAfter, *row.PauseCause)
	require.WithinDuration(t, before.Add(2*time.Minute), *row.PausedUntil, 2*time.Second)
	got := fixture.Get(t, b.q, hooks[0].ID)
	require.Equal(t, "retry", got.Status)
	require.False(t, got.RunAt.Before(*row.PausedUntil), "the hook's own retry is no sooner than Retry-After (the policy says 30 s)")
	require.Len(t, b.alertsOfKind(t, project, event.AlertKindEndpointPaused), 1, "a pause of a minute or more is announced")

	// A Retry-After beyond the bound is cut to an hour.
	hooks = b.leasedTo(t, fixture.Project(t, b.q, domain, manyRetries), "/limited", 1)
	r = resultFor(hooks[0], eventv1.Outcome_OUTCOME_FAILURE, 503, "HTTP 503")
	r.RetryAfter = durationpb.New(48 * time.Hour)
	require.NoError(t, b.handle(t, r))
	got = fixture.Get(t, b.q, hooks[0].ID)
	require.WithinDuration(t, fixture.DBNow(t, b.q).Add(retry.MaxRetryAfter), *got.RunAt, 5*time.Second)
}

func TestAShortRetryAfterIsNotAnnounced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, manyRetries)
	hooks := b.leasedTo(t, project, "/limited", 1)
	r := resultFor(hooks[0], eventv1.Outcome_OUTCOME_FAILURE, 429, "HTTP 429")
	r.RetryAfter = durationpb.New(2 * time.Second)
	require.NoError(t, b.handle(t, r))
	require.NotNil(t, b.breakerRow(t, project).PausedAt)
	require.Empty(t, b.alertsOfKind(t, project, event.AlertKindEndpointPaused))
}

func TestHealthyAnswersCostNoBreakerRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := fixture.Project(t, b.q, domain, manyRetries)
	for _, h := range b.leasedTo(t, project, "/ok", 3) {
		require.NoError(t, b.handle(t, resultFor(h, eventv1.Outcome_OUTCOME_SUCCESS, 200, "")))
	}
	_, err := b.q.GetBreakerForTest(context.Background(), storetest.GetBreakerForTestParams{ProjectID: project, Domain: domain})
	require.Error(t, err, "no row for a unit that never failed")
	// A 404 is the server answering: it ends a run of failures.
	hooks := b.leasedTo(t, project, "/missing", 2)
	require.NoError(t, b.handle(t, resultFor(hooks[0], eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")))
	require.EqualValues(t, 1, b.breakerRow(t, project).ConsecutiveFailures)
	require.NoError(t, b.handle(t, resultFor(hooks[1], eventv1.Outcome_OUTCOME_FAILURE, 404, "HTTP 404")))
	require.Zero(t, b.breakerRow(t, project).ConsecutiveFailures)
}

func TestAnAttemptWhoseLeasesAllExpiredSaysNothingOfTheReceiver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.applier.SetBreakerPolicy(tripAfter3))
	project := fixture.Project(t, b.q, domain, manyRetries)
	for _, h := range b.leasedTo(t, project, "/x", 3) {
		// What the claim reports when it gives an attempt up: no exchange.
		r := resultFor(h, eventv1.Outcome_OUTCOME_FAILURE, 0, "no result after 6 deliveries of this attempt")
		r.Duration = nil
		require.NoError(t, b.handle(t, r))
		require.Equal(t, "retry", fixture.Get(t, b.q, h.ID).Status, "the attempt itself is recorded")
	}
	_, err := b.q.GetBreakerForTest(context.Background(), storetest.GetBreakerForTestParams{ProjectID: project, Domain: domain})
	require.Error(t, err, "no failure of the receiver was counted")
}

func TestAListenersFailuresSayNothingOfTheDomain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.applier.SetBreakerPolicy(tripAfter3))
	project := fixture.Project(t, b.q, domain, manyRetries)
	hooks := b.leasedTo(t, project, "/x", 4)
	for i, h := range hooks {
		// What the dispatcher reports of a listener's nack or ack timeout.
		errText := event.ListenerErrorPrefix + "db locked"
		if i%2 == 1 {
			errText = event.ListenerAckTimeout
		}
		require.NoError(t, b.handle(t, resultFor(h, eventv1.Outcome_OUTCOME_FAILURE, 0, errText)))
		require.Equal(t, "retry", fixture.Get(t, b.q, h.ID).Status, "the attempt itself is recorded")
	}
	_, err := b.q.GetBreakerForTest(context.Background(), storetest.GetBreakerForTestParams{ProjectID: project, Domain: domain})
	require.Error(t, err, "no failure of the domain was counted")
}

func TestResumeRequestEndsThePauseAndReleasesTheHooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.applier.SetBreakerPolicy(tripAfter3))
	project := fixture.Project(t, b.q, domain, manyRetries)
	for _, h := range b.leasedTo(t, project, "/x", 3) {
		require.NoError(t, b.handle(t, resultFor(h, eventv1.Outcome_OUTCOME_FAILURE, 0, "connection refused")))
	}
	waiting := fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: domain, Path: "/x", DueIn: -time.Second})
	require.Zero(t, b.claimAll(t))
	n, err := b.applier.ApplyResumes(context.Background())
	require.NoError(t, err)
	require.Zero(t, n, "nothing asked")

	_, err = b.q.RequestResumeForTest(context.Background(), storetest.RequestResumeForTestParams{ProjectID: project, Domain: domain})
	require.NoError(t, err)
	n, err = b.applier.ApplyResumes(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	row := b.breakerRow(t, project)
	require.Nil(t, row.PausedAt)
	require.False(t, row.ResumeRequested)
	require.Equal(t, 1, b.claimAll(t), "the held hook is due at once")
	require.Equal(t, waiting.ID, fixture.Get(t, b.q, waiting.ID).ID)
	require.EqualValues(t, 0, fixture.Get(t, b.q, waiting.ID).Attempts)
	require.Len(t, b.alertsOfKind(t, project, event.AlertKindEndpointRecovered), 1)
}

package breaker_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/scheduler/internal/breaker"
)

var (
	t0     = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	policy = breaker.Policy{Failures: 3, MinSpan: 2 * time.Second, Cooldown: 30 * time.Second,
		MaxCooldown: 100 * time.Second, AlertRetryAfter: time.Minute, PathWindow: time.Minute}
)

func fail(err string) breaker.Outcome {
	return breaker.Outcome{HookID: uuid.New(), Failing: true, Error: err}
}

// run applies outcomes one second apart from t0 and returns the state and
// every event.
func run(s breaker.State, os ...breaker.Outcome) (breaker.State, []breaker.Event) {
	var all []breaker.Event
	for i, o := range os {
		var evs []breaker.Event
		s, evs = policy.Apply(s, o, t0.Add(time.Duration(i)*time.Second))
		all = append(all, evs...)
	}
	return s, all
}

func TestFailuresInARowOpenTheBreakerOnceTheySpanTheMinimum(t *testing.T) {
	t.Parallel()
	s, evs := run(breaker.State{}, fail("timeout"), fail("HTTP 503"))
	require.False(t, s.Paused())
	require.Empty(t, evs)
	require.EqualValues(t, 2, s.Failures)

	// Three failures within the same instant are not yet a failing server.
	var burst breaker.State
	for range 5 {
		burst, evs = policy.Apply(burst, fail("timeout"), t0)
		require.Empty(t, evs)
	}
	require.False(t, burst.Paused())

	s, evs = run(breaker.State{}, fail("timeout"), fail("HTTP 503"), fail("HTTP 500"))
	require.True(t, s.Paused())
	require.Equal(t, breaker.CauseFailures, s.Cause)
	require.Equal(t, t0.Add(2*time.Second), s.PausedAt)
	require.Equal(t, t0.Add(32*time.Second), s.PausedUntil)
	require.Equal(t, s.PausedUntil, s.HeldUntil)
	require.Contains(t, s.Reason, "3 failures in a row")
	require.Contains(t, s.Reason, "HTTP 500")
	require.Len(t, evs, 1)
	require.Equal(t, breaker.Paused, evs[0].Kind)
	require.True(t, s.Alerted)
}

func at(path string, o breaker.Outcome) breaker.Outcome {
	o.Path = path
	return o
}

func TestARunThatSparesThePathThatJustAnsweredIsThosePathsFault(t *testing.T) {
	t.Parallel()
	healthy := breaker.Outcome{HookID: uuid.New()}
	// /hang times out, /ok answers; then only /hang and /fail have
	// traffic, and fail.
	s, evs := run(breaker.State{}, at("/hang", fail("timeout")), at("/ok", healthy),
		at("/hang", fail("timeout")), at("/fail", fail("HTTP 500")), at("/hang", fail("timeout")), at("/hang", fail("timeout")))
	require.False(t, s.Paused(), "/ok answered a second before the run: the server is up")
	require.Empty(t, evs)
	require.EqualValues(t, 4, s.Failures)
	require.Equal(t, "/ok", s.HealthyPath)

	// Past the window since /ok answered, the run opens the breaker: the
	// server may have gone down since.
	s, evs = policy.Apply(s, at("/hang", fail("timeout")), t0.Add(time.Second+policy.PathWindow+time.Second))
	require.True(t, s.Paused())
	require.Len(t, evs, 1)

	// A run in which the path that answered fails too is the server's,
	// however recent the answer.
	s, _ = run(breaker.State{}, at("/a", fail("timeout")), at("/ok", healthy),
		at("/a", fail("timeout")), at("/ok", fail("HTTP 503")), at("/a", fail("timeout")))
	require.True(t, s.Paused())
	require.True(t, s.HealthyPathFailing)
}

func TestAHealthyAnswerEndsTheRun(t *testing.T) {
	t.Parallel()
	s, _ := run(breaker.State{}, fail("timeout"), fail("timeout"), breaker.Outcome{HookID: uuid.New()}, fail("timeout"), fail("timeout"))
	require.False(t, s.Paused())
	require.EqualValues(t, 2, s.Failures)
	require.Equal(t, t0.Add(3*time.Second), s.FailingSince)
}

func TestRetryAfterPausesAtOnceAndAlertsOnlyWhenLong(t *testing.T) {
	t.Parallel()
	short := fail("HTTP 429")
	short.RetryAfter = 2 * time.Second
	s, evs := run(breaker.State{}, short)
	require.True(t, s.Paused())
	require.Equal(t, breaker.CauseRetryAfter, s.Cause)
	require.Equal(t, t0.Add(2*time.Second), s.PausedUntil)
	require.Empty(t, evs, "a short Retry-After is flow control, not an incident")

	long := fail("HTTP 503")
	long.RetryAfter = 10 * time.Minute
	s, evs = run(breaker.State{}, long)
	require.Equal(t, t0.Add(10*time.Minute), s.PausedUntil)
	require.Len(t, evs, 1)
	require.Contains(t, s.Reason, "Retry-After")
}

func TestTheProbeDecides(t *testing.T) {
	t.Parallel()
	open, _ := run(breaker.State{}, fail("timeout"), fail("timeout"), fail("timeout"))
	probe := uuid.New()
	open.Probe = probe
	at := open.PausedUntil

	// An answer to a delivery sent before the pause changes nothing.
	s, evs := policy.Apply(open, breaker.Outcome{HookID: uuid.New()}, at)
	require.Equal(t, open, s)
	require.Empty(t, evs)

	// The probe's success closes it and says what to release.
	s, evs = policy.Apply(open, breaker.Outcome{HookID: probe}, at)
	require.Equal(t, breaker.State{HealthyAt: at}, s, "active with no failure; the probe's answer the last healthy one")
	require.Len(t, evs, 1)
	require.Equal(t, breaker.Resumed, evs[0].Kind)
	require.Equal(t, open.HeldUntil, evs[0].State.HeldUntil)
	require.True(t, evs[0].State.Alerted)

	// Its failure opens it again, longer, in the same pause: no new alert.
	failed := fail("timeout")
	failed.HookID = probe
	s, evs = policy.Apply(open, failed, at)
	require.Empty(t, evs)
	require.Equal(t, open.PausedAt, s.PausedAt)
	require.Equal(t, 60*time.Second, s.Cooldown)
	require.Equal(t, at.Add(60*time.Second), s.PausedUntil)
	require.Equal(t, uuid.Nil, s.Probe)
	for range 3 {
		s.Probe = probe
		s, _ = policy.Apply(s, failed, at)
	}
	require.Equal(t, policy.MaxCooldown, s.Cooldown, "doubling stops at the maximum")
}

func TestAStrayFailureOnlyLengthensAPause(t *testing.T) {
	t.Parallel()
	short := fail("HTTP 429")
	short.RetryAfter = 2 * time.Second
	s, _ := run(breaker.State{}, short)
	longer := fail("HTTP 429")
	longer.RetryAfter = 5 * time.Second
	s2, evs := policy.Apply(s, longer, t0.Add(time.Second))
	require.Empty(t, evs)
	require.Equal(t, t0.Add(6*time.Second), s2.PausedUntil)
	require.Equal(t, s.PausedAt, s2.PausedAt)
	s3, _ := policy.Apply(s2, fail("timeout"), t0.Add(time.Second))
	require.Equal(t, s2.PausedUntil, s3.PausedUntil)
}

func TestResumeEndsAPause(t *testing.T) {
	t.Parallel()
	open, _ := run(breaker.State{}, fail("timeout"), fail("timeout"), fail("timeout"))
	open.ResumeRequested = true
	s, evs := policy.Resume(open)
	require.Equal(t, breaker.State{}, s)
	require.Len(t, evs, 1)
	require.Equal(t, breaker.Resumed, evs[0].Kind)

	s, evs = policy.Resume(breaker.State{Failures: 2, ResumeRequested: true})
	require.Empty(t, evs)
	require.False(t, s.ResumeRequested)
	require.EqualValues(t, 2, s.Failures)
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, breaker.DefaultPolicy.Validate())
	require.Error(t, breaker.Policy{Failures: 0, Cooldown: time.Second, MaxCooldown: time.Second}.Validate())
	require.Error(t, breaker.Policy{Failures: 1, Cooldown: time.Minute, MaxCooldown: time.Second}.Validate())
}

package retry_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/retry"
)

// projectDefaults are every project's defaults (docs/product.md, "Statuses
// and retries").
var projectDefaults = retry.Policy{
	MinRetries: 5, DelaySecs: 30, Strategy: retry.StrategyExponential,
	BackoffFactor: 2, MaxDelaySecs: 3600, Jitter: true,
}

func TestDelayFixedIsConstant(t *testing.T) {
	t.Parallel()
	p := retry.Policy{MinRetries: 3, DelaySecs: 17, Strategy: retry.StrategyFixed, BackoffFactor: 3, MaxDelaySecs: 5}
	for n := 1; n <= 10; n++ {
		require.Equal(t, 17*time.Second, p.Delay(n, nil), "retry %d", n)
	}
}

func TestDelayExponentialGrowsThenCaps(t *testing.T) {
	t.Parallel()
	p := retry.Policy{MinRetries: 15, DelaySecs: 30, Strategy: retry.StrategyExponential, BackoffFactor: 2, MaxDelaySecs: 3600}
	want := []time.Duration{30, 60, 120, 240, 480, 960, 1920, 3600, 3600}
	for i, w := range want {
		require.Equal(t, w*time.Second, p.Delay(i+1, nil), "retry %d", i+1)
	}
	// Far beyond the cap the power overflows; the cap still holds.
	require.Equal(t, 3600*time.Second, p.Delay(5000, nil))
}

func TestDelayExponentialFractionalFactor(t *testing.T) {
	t.Parallel()
	p := retry.Policy{DelaySecs: 10, Strategy: retry.StrategyExponential, BackoffFactor: 1.5, MaxDelaySecs: 60}
	require.Equal(t, 10*time.Second, p.Delay(1, nil))
	require.Equal(t, 15*time.Second, p.Delay(2, nil))
	require.Equal(t, 22500*time.Millisecond, p.Delay(3, nil))
	require.Equal(t, 60*time.Second, p.Delay(6, nil)) // 10*1.5^5 = 75.9 > 60
}

func TestDelayTreatsRetryZeroAsFirst(t *testing.T) {
	t.Parallel()
	p := retry.Policy{DelaySecs: 10, Strategy: retry.StrategyExponential, BackoffFactor: 2, MaxDelaySecs: 60}
	require.Equal(t, p.Delay(1, nil), p.Delay(0, nil))
}

func TestJitterUsesTheInjectedSource(t *testing.T) {
	t.Parallel()
	p := retry.Policy{DelaySecs: 100, Strategy: retry.StrategyFixed, Jitter: true}
	require.Equal(t, 80*time.Second, p.Delay(1, func() float64 { return 0 }))
	require.Equal(t, 100*time.Second, p.Delay(1, func() float64 { return 0.5 }))
	require.InDelta(t, float64(120*time.Second), float64(p.Delay(1, func() float64 { return 0.999999 })), float64(time.Millisecond))
}

func TestJitterStaysWithinBoundsAndSpreads(t *testing.T) {
	t.Parallel()
	src := rand.New(rand.NewPCG(1, 2))
	for _, p := range []retry.Policy{
		{DelaySecs: 30, Strategy: retry.StrategyFixed, Jitter: true},
		projectDefaults,
	} {
		for n := 1; n <= 10; n++ {
			base := retry.Policy{DelaySecs: p.DelaySecs, Strategy: p.Strategy, BackoffFactor: p.BackoffFactor, MaxDelaySecs: p.MaxDelaySecs}.Delay(n, nil)
			lo, hi := time.Duration(float64(base)*retry.JitterMin), time.Duration(float64(base)*retry.JitterMax)
			minSeen, maxSeen := hi, lo
			for range 2000 {
				d := p.Delay(n, src.Float64)
				require.GreaterOrEqual(t, d, lo)
				require.LessOrEqual(t, d, hi)
				minSeen, maxSeen = min(minSeen, d), max(maxSeen, d)
			}
			// Over 2000 samples a uniform factor covers most of its range.
			spread := float64(hi - lo)
			require.Less(t, float64(minSeen-lo), 0.05*spread, "retry %d: jitter never went low", n)
			require.Less(t, float64(hi-maxSeen), 0.05*spread, "retry %d: jitter never went high", n)
		}
	}
}

func TestJitterWithDefaultSourceStaysWithinBounds(t *testing.T) {
	t.Parallel()
	p := retry.Policy{DelaySecs: 50, Strategy: retry.StrategyFixed, Jitter: true}
	for range 1000 {
		d := p.Delay(1, nil)
		require.GreaterOrEqual(t, d, 40*time.Second)
		require.LessOrEqual(t, d, 60*time.Second)
	}
}

func TestMaxAttempts(t *testing.T) {
	t.Parallel()
	require.Equal(t, 6, projectDefaults.MaxAttempts())
	require.Equal(t, 1, retry.Policy{MinRetries: 0}.MaxAttempts())
	require.Equal(t, 16, retry.Policy{MinRetries: 15}.MaxAttempts())
}

func TestBudgetCountsFromItsBase(t *testing.T) {
	t.Parallel()
	p := retry.Policy{MinRetries: 2, DelaySecs: 10, Strategy: retry.StrategyExponential, BackoffFactor: 2, MaxDelaySecs: 3600}
	fresh := retry.Budget{Policy: p}
	require.Equal(t, 3, fresh.MaxAttempts())
	require.Equal(t, 10*time.Second, fresh.DelayAfter(1, nil))
	require.Equal(t, 20*time.Second, fresh.DelayAfter(2, nil))

	// Bulk-retried after 3 attempts: attempts 4 to 6 are the new budget,
	// whose retries wait the policy's first and second delays again.
	retried := retry.Budget{Policy: p, Base: 3}
	require.Equal(t, 6, retried.MaxAttempts())
	require.Equal(t, 10*time.Second, retried.DelayAfter(4, nil))
	require.Equal(t, 20*time.Second, retried.DelayAfter(5, nil))
	require.Equal(t, 10*time.Second, retried.DelayAfter(3, nil), "never before retry 1")
	require.Equal(t, 3, retry.Budget{Policy: p, Base: -1}.MaxAttempts(), "a negative base counts as none")
}

func TestParseOverrideFull(t *testing.T) {
	t.Parallel()
	p, ok, err := retry.ParseOverride(json.RawMessage(`{"minRetries":3,"delaySecs":10,"strategy":"exponential","backoffFactor":1.5,"maxDelaySecs":120,"jitter":true}`))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, retry.Policy{MinRetries: 3, DelaySecs: 10, Strategy: "exponential", BackoffFactor: 1.5, MaxDelaySecs: 120, Jitter: true}, p)
}

func TestParseOverrideDefaultsOptionalFields(t *testing.T) {
	t.Parallel()
	p, ok, err := retry.ParseOverride(json.RawMessage(`{"minRetries":2,"delaySecs":5,"strategy":"exponential"}`))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, retry.Policy{MinRetries: 2, DelaySecs: 5, Strategy: "exponential", BackoffFactor: 2.0, MaxDelaySecs: 3600, Jitter: false}, p)
}

func TestParseOverrideAbsent(t *testing.T) {
	t.Parallel()
	for _, raw := range []json.RawMessage{nil, json.RawMessage(``), json.RawMessage(`null`), json.RawMessage(" null ")} {
		_, ok, err := retry.ParseOverride(raw)
		require.NoError(t, err, "%q", raw)
		require.False(t, ok, "%q", raw)
	}
}

func TestParseOverrideRejectsUnusable(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`[1,2]`,
		`{"minRetries":"3","delaySecs":5,"strategy":"fixed"}`,
		`{"delaySecs":5,"strategy":"fixed"}`,
		`{"minRetries":1,"strategy":"fixed"}`,
		`{"minRetries":1,"delaySecs":5}`,
		`{"minRetries":1,"delaySecs":5,"strategy":"linear"}`,
		`{"minRetries":-1,"delaySecs":5,"strategy":"fixed"}`,
		`{"minRetries":1,"delaySecs":5,"strategy":"exponential","backoffFactor":0.5}`,
	} {
		_, ok, err := retry.ParseOverride(json.RawMessage(raw))
		require.Error(t, err, raw)
		require.False(t, ok, raw)
	}
}

func TestEffectiveOverrideReplacesProjectEntirely(t *testing.T) {
	t.Parallel()
	p, err := retry.Effective(projectDefaults, json.RawMessage(`{"minRetries":1,"delaySecs":5,"strategy":"fixed"}`))
	require.NoError(t, err)
	// Jitter is on for the project but absent from the override: off.
	require.Equal(t, retry.Policy{MinRetries: 1, DelaySecs: 5, Strategy: "fixed", BackoffFactor: 2, MaxDelaySecs: 3600}, p)
	require.Equal(t, 2, p.MaxAttempts())
}

func TestEffectiveWithoutOverrideIsProject(t *testing.T) {
	t.Parallel()
	p, err := retry.Effective(projectDefaults, nil)
	require.NoError(t, err)
	require.Equal(t, projectDefaults, p)
}

func TestEffectiveFallsBackToProjectOnBadOverride(t *testing.T) {
	t.Parallel()
	p, err := retry.Effective(projectDefaults, json.RawMessage(`{"minRetries":1}`))
	require.Error(t, err)
	require.Equal(t, projectDefaults, p)
}

// Overrides are decoded once and remembered: more distinct ones than the
// memory holds, read twice over, and an unusable one read twice, each give
// what decoding them afresh gives.
func TestParseOverrideGivesTheSameAnswerEveryTime(t *testing.T) {
	t.Parallel()
	const n = 2500
	for range 2 {
		for i := range n {
			raw := fmt.Sprintf(`{"minRetries":%d,"delaySecs":%d,"strategy":"fixed"}`, i%10, i+1)
			p, ok, err := retry.ParseOverride(json.RawMessage(raw))
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, retry.Policy{MinRetries: i % 10, DelaySecs: i + 1, Strategy: "fixed", BackoffFactor: 2.0, MaxDelaySecs: 3600}, p)
		}
		_, ok, err := retry.ParseOverride(json.RawMessage(` {"minRetries":2,"strategy":"fixed"} `))
		require.ErrorContains(t, err, "required")
		require.False(t, ok)
	}
}

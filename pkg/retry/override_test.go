package retry_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/retry"
)

// request decodes a retryOverride as the gateway receives it.
func request(t *testing.T, body string) *retry.Request {
	t.Helper()
	var r *retry.Request
	require.NoError(t, json.Unmarshal([]byte(body), &r), body)
	return r
}

func TestValidateOverrideWritesTheDefaultsOut(t *testing.T) {
	t.Parallel()
	raw, bad := request(t, `{"minRetries":3,"delaySecs":10,"strategy":"exponential"}`).ValidateOverride()
	require.Empty(t, bad)
	// The stored bytes are part of a request's idempotency fingerprint:
	// their form must not drift.
	require.Equal(t, `{"minRetries":3,"delaySecs":10,"strategy":"exponential","backoffFactor":2,"jitter":false}`, string(raw))

	raw, bad = request(t, `{"jitter":true,"maxDelaySecs":60,"backoffFactor":1.1,"strategy":"fixed","delaySecs":60,"minRetries":15}`).ValidateOverride()
	require.Empty(t, bad)
	require.Equal(t, `{"minRetries":15,"delaySecs":60,"strategy":"fixed","backoffFactor":1.1,"maxDelaySecs":60,"jitter":true}`, string(raw))
}

func TestValidateOverrideOfNoneIsNone(t *testing.T) {
	t.Parallel()
	raw, bad := request(t, `null`).ValidateOverride()
	require.Nil(t, raw)
	require.Empty(t, bad)
}

func TestValidateOverrideNamesEveryProblemAsTheAPIDoes(t *testing.T) {
	t.Parallel()
	outOfBounds := []retry.Problem{
		{Field: "retryOverride.minRetries", Message: "must be from 1 to 15"},
		{Field: "retryOverride.delaySecs", Message: "must be from 5 to 60"},
		{Field: "retryOverride.strategy", Message: `must be "fixed" or "exponential"`},
		{Field: "retryOverride.backoffFactor", Message: "must be from 1.1 to 4.0"},
		{Field: "retryOverride.maxDelaySecs", Message: "must be from 60 to 3600"},
	}
	tests := []struct {
		name, body string
		want       []retry.Problem
	}{
		{"empty", `{}`, []retry.Problem{
			{Field: "retryOverride.minRetries", Message: "is required"},
			{Field: "retryOverride.delaySecs", Message: "is required"},
			{Field: "retryOverride.strategy", Message: "is required"},
		}},
		{"every member past its lower edge", `{"minRetries":0,"delaySecs":4,"strategy":"Fixed","backoffFactor":1.09,"maxDelaySecs":59}`, outOfBounds},
		{"every member past its upper edge", `{"minRetries":16,"delaySecs":61,"strategy":"linear","backoffFactor":4.01,"maxDelaySecs":3601}`, outOfBounds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, bad := request(t, tt.body).ValidateOverride()
			require.Nil(t, raw)
			require.Equal(t, tt.want, bad)
		})
	}
}

// What the gateway stores is what the scheduler applies.
func TestAValidatedOverrideParsesToItsPolicy(t *testing.T) {
	t.Parallel()
	raw, bad := request(t, `{"minRetries":2,"delaySecs":5,"strategy":"exponential"}`).ValidateOverride()
	require.Empty(t, bad)
	p, ok, err := retry.ParseOverride(raw)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, retry.Policy{MinRetries: 2, DelaySecs: 5, Strategy: "exponential", BackoffFactor: 2, MaxDelaySecs: 3600}, p)
}

func TestRangeCheck(t *testing.T) {
	t.Parallel()
	ints := retry.Range[int]{Min: 5, Max: 60}
	require.NoError(t, ints.Check(5))
	require.NoError(t, ints.Check(60))
	require.EqualError(t, ints.Check(61), "must be from 5 to 60")
	factors := retry.Range[float64]{Min: 1.1, Max: 4}
	require.NoError(t, factors.Check(4))
	require.EqualError(t, factors.Check(1.0999999), "must be from 1.1 to 4.0")
	require.Error(t, factors.Check(math.NaN()))
}

func TestCheckStrategy(t *testing.T) {
	t.Parallel()
	require.NoError(t, retry.CheckStrategy(retry.StrategyFixed))
	require.NoError(t, retry.CheckStrategy(retry.StrategyExponential))
	require.EqualError(t, retry.CheckStrategy("Exponential"), `must be "fixed" or "exponential"`)
}

func TestColumnsMakeTheHooksPolicy(t *testing.T) {
	t.Parallel()
	c := retry.Columns{MinRetries: 5, DelaySecs: 30, Strategy: "exponential", BackoffFactor: 2, MaxDelaySecs: 3600, Jitter: true}
	require.Equal(t, projectDefaults, c.Project())
	p, err := c.Policy()
	require.NoError(t, err)
	require.Equal(t, projectDefaults, p, "no override: the project's policy")

	c.Override = json.RawMessage(`{"minRetries":1,"delaySecs":5,"strategy":"fixed"}`)
	p, err = c.Policy()
	require.NoError(t, err)
	require.Equal(t, retry.Policy{MinRetries: 1, DelaySecs: 5, Strategy: "fixed", BackoffFactor: 2, MaxDelaySecs: 3600}, p)

	c.Override = json.RawMessage(`{"minRetries":1}`)
	p, err = c.Policy()
	require.Error(t, err)
	require.Equal(t, projectDefaults, p, "an unusable override: the project's policy")
}

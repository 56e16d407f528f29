package hook_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

func TestParsePostIn(t *testing.T) {
	t.Parallel()
	valid := map[string]time.Duration{
		"1s":           time.Second,
		"90s":          90 * time.Second,
		"1m":           time.Minute,
		"2h30m":        150 * time.Minute,
		"1d":           24 * time.Hour,
		"1d2h3m4s":     26*time.Hour + 3*time.Minute + 4*time.Second,
		"365d":         365 * 24 * time.Hour,
		"8760h":        365 * 24 * time.Hour,
		"0d0h0m1s":     time.Second,
		"00000000005s": 5 * time.Second,
	}
	for in, want := range valid {
		got, msg := hook.ParsePostIn(in)
		require.Empty(t, msg, in)
		require.Equal(t, want, got, in)
	}
	invalid := map[string]string{
		"":                      "must be a duration",
		"0s":                    "at least 1s",
		"0d":                    "at least 1s",
		"365d1s":                "at most 365d",
		"366d":                  "at most 365d",
		"99999999999999999999d": "at most 365d",
		"1h1d":                  "must be a duration",
		"1.5h":                  "must be a duration",
		"-1s":                   "must be a duration",
		"1 h":                   "must be a duration",
		"1H":                    "must be a duration",
		"1w":                    "must be a duration",
		"s":                     "must be a duration",
	}
	for in, want := range invalid {
		_, msg := hook.ParsePostIn(in)
		require.Contains(t, msg, want, in)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func TestResolveLocal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, zone, wall, want string
	}{
		{"ordinary winter time", "America/New_York", "2025-01-15T09:00:00", "2025-01-15T14:00:00Z"},
		{"ordinary summer time", "America/New_York", "2025-07-15T09:00:00", "2025-07-15T13:00:00Z"},
		{"gap: 02:30 on spring-forward day becomes 03:00", "America/New_York", "2025-03-09T02:30:00", "2025-03-09T07:00:00Z"},
		{"gap: its first moment", "America/New_York", "2025-03-09T02:00:00", "2025-03-09T07:00:00Z"},
		{"just before the gap", "America/New_York", "2025-03-09T01:59:59", "2025-03-09T06:59:59Z"},
		{"fold: the earlier 01:30", "America/New_York", "2025-11-02T01:30:00", "2025-11-02T05:30:00Z"},
		{"just after the fold", "America/New_York", "2025-11-02T02:00:00", "2025-11-02T07:00:00Z"},
		{"gap in Europe", "Europe/Paris", "2026-03-29T02:15:00", "2026-03-29T01:00:00Z"},
		{"fold in Europe", "Europe/Paris", "2026-10-25T02:15:00", "2026-10-25T00:15:00Z"},
		{"half-hour DST gap", "Australia/Lord_Howe", "2025-10-05T02:10:00", "2025-10-04T15:30:00Z"},
		{"half-hour DST fold", "Australia/Lord_Howe", "2025-04-06T01:45:00", "2025-04-05T14:45:00Z"},
		{"a skipped day", "Pacific/Apia", "2011-12-30T12:00:00", "2011-12-30T10:00:00Z"},
		{"southern hemisphere gap", "America/Santiago", "2025-09-07T00:30:00", "2025-09-07T04:00:00Z"},
		{"fixed zone", "UTC", "2030-01-02T03:04:05", "2030-01-02T03:04:05Z"},
		{"far future rule", "America/New_York", "2090-03-12T02:30:00", "2090-03-12T07:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wall, err := time.Parse("2006-01-02T15:04:05", tt.wall)
			require.NoError(t, err)
			got, err := hook.ResolveLocal(wall, mustZone(t, tt.zone))
			require.NoError(t, err)
			require.Equal(t, tt.want, got.UTC().Format(time.RFC3339))
		})
	}
}

func TestValidateRetryOverrideJSON(t *testing.T) {
	t.Parallel()
	path, postIn := "/x", "1m"
	req := hook.CreateRequest{Path: &path, Data: json.RawMessage(`{ "a" : 1 }`), PostIn: &postIn}
	require.NoError(t, json.Unmarshal([]byte(`{"minRetries":3,"delaySecs":10,"strategy":"exponential"}`), &req.RetryOverride))
	n, err := req.Validate(1024)
	require.NoError(t, err)
	require.JSONEq(t, `{"minRetries":3,"delaySecs":10,"strategy":"exponential","backoffFactor":2.0,"jitter":false}`, string(n.RetryOverride))
	require.Equal(t, `{"a":1}`, string(n.Data), "data is stored compacted")
	require.Equal(t, time.Minute, n.PostIn)
	require.Nil(t, n.PostAt)

	require.NoError(t, json.Unmarshal([]byte(`{"minRetries":15,"delaySecs":60,"strategy":"fixed","backoffFactor":1.1,"maxDelaySecs":60,"jitter":true}`), &req.RetryOverride))
	n, err = req.Validate(1024)
	require.NoError(t, err)
	require.JSONEq(t, `{"minRetries":15,"delaySecs":60,"strategy":"fixed","backoffFactor":1.1,"maxDelaySecs":60,"jitter":true}`, string(n.RetryOverride))
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	var req hook.CreateRequest
	require.NoError(t, json.Unmarshal([]byte(`{"path":"x","data":[],"postAt":"2030-01-01T00:00:00Z","postIn":"1m","retryOverride":{}}`), &req))
	_, err := req.Validate(1024)
	var invalid *hook.InvalidError
	require.True(t, errors.As(err, &invalid))
	var fields []string
	for _, p := range invalid.Problems {
		fields = append(fields, p.Field)
	}
	require.ElementsMatch(t, []string{"data", "path", "postAt", "postIn",
		"retryOverride.minRetries", "retryOverride.delaySecs", "retryOverride.strategy"}, fields)
}

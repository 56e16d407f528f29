package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSettingsDefaultsAndOverrides(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"RIVERBASE_DATABASE_URL": "postgres://u:secret@h/db", "RIVERBASE_RECEIVER_URL": "https://127.0.0.1:1/",
		"RIVERBASE_SIGNING_KEY": "key",
	}
	s, err := loadSettings(env(base))
	require.NoError(t, err)
	require.Equal(t, "https://127.0.0.1:1", s.ReceiverURL)
	require.Equal(t, 1000, s.MaxWorkers)
	require.Equal(t, 20*time.Millisecond, s.FetchPollInterval)
	require.Equal(t, slog.LevelWarn, s.RiverLogLevel)
	require.Equal(t, time.Hour, s.RescueAfter, "river's default")

	base["RIVERBASE_MAX_WORKERS"], base["RIVERBASE_FETCH_COOLDOWN"] = "7", "3ms"
	s, err = loadSettings(env(base))
	require.NoError(t, err)
	require.Equal(t, 7, s.MaxWorkers)
	require.Equal(t, 3*time.Millisecond, s.FetchCooldown)
	for k, v := range s.public() {
		require.NotContains(t, v, "secret", k)
		require.NotContains(t, v, "key", k)
	}
}

func TestSettingsReportEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := loadSettings(env(map[string]string{"RIVERBASE_MAX_WORKERS": "x", "RIVERBASE_FETCH_COOLDOWN": "soon", "RIVERBASE_RESCUE_AFTER": "15s"}))
	require.Error(t, err)
	for _, want := range []string{"RIVERBASE_DATABASE_URL is required", "RIVERBASE_SIGNING_KEY is required", "RIVERBASE_MAX_WORKERS", "RIVERBASE_FETCH_COOLDOWN", "RIVERBASE_RESCUE_AFTER must exceed"} {
		require.ErrorContains(t, err, want)
	}
}

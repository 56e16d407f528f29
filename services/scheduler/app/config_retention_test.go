package app_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/services/scheduler/app"
)

// TestRetentionConfigBounds: every retention setting out of its bounds is
// reported by its variable's name; the edges are accepted.
func TestRetentionConfigBounds(t *testing.T) {
	t.Parallel()
	_, err := app.ConfigFromEnv(envconf.Map(map[string]string{
		"SUNDIAL_SCHEDULER_RETENTION_INTERVAL":    "-1s",
		"SUNDIAL_SCHEDULER_RETENTION_BATCH":       "10001",
		"SUNDIAL_SCHEDULER_RETENTION_MAX_BATCHES": "0",
		"SUNDIAL_SCHEDULER_RETENTION_PAUSE":       "11s",
	}))
	for _, name := range []string{
		"SUNDIAL_SCHEDULER_RETENTION_INTERVAL", "SUNDIAL_SCHEDULER_RETENTION_BATCH",
		"SUNDIAL_SCHEDULER_RETENTION_MAX_BATCHES", "SUNDIAL_SCHEDULER_RETENTION_PAUSE",
	} {
		require.ErrorContains(t, err, name)
	}
	valid, err := app.ConfigFromEnv(envconf.Map(nil))
	require.NoError(t, err)
	for name, mutate := range map[string]func(*app.Config){
		"zero batch":       func(c *app.Config) { c.RetentionBatch = 0 },
		"huge max batches": func(c *app.Config) { c.RetentionMaxBatches = 1001 },
		"negative pause":   func(c *app.Config) { c.RetentionPause = -time.Millisecond },
	} {
		cfg := valid
		mutate(&cfg)
		require.Error(t, cfg.Validate(), name)
	}
	edge := valid
	edge.RetentionInterval, edge.RetentionBatch, edge.RetentionMaxBatches, edge.RetentionPause = 0, 1, 1000, 10*time.Second
	require.NoError(t, edge.Validate(), "an interval of 0 turns the cleaner off")
}

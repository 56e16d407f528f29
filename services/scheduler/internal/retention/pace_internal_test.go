package retention

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// slowExpired deletes full batches forever, each statement taking took by
// the test's clock.
type slowExpired struct {
	clock *time.Time
	took  time.Duration
}

func (s slowExpired) DeleteExpiredHooks(_ context.Context, maxHooks int32) (store.DeleteExpiredHooksRow, error) {
	*s.clock = s.clock.Add(s.took)
	return store.DeleteExpiredHooksRow{Hooks: int64(maxHooks), Attempts: int64(maxHooks)}, nil
}

// pacedCleaner is a Cleaner on a test clock whose statements take took; it
// returns the waits the cleaner asks for, which pass at once.
func pacedCleaner(t *testing.T, cfg Config, took time.Duration) (*Cleaner, *[]time.Duration) {
	t.Helper()
	clock := time.Unix(0, 0)
	c, err := New(slowExpired{clock: &clock, took: took}, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	var waits []time.Duration
	c.now = func() time.Time { return clock }
	c.wait = func(_ context.Context, d time.Duration) bool {
		waits = append(waits, d)
		return true
	}
	return c, &waits
}

// TestASlowStatementLengthensThePause: after a statement that took longer
// than a fifth of Pause, the cleaner waits four times as long as it took,
// between statements and before the next pass; a fast one leaves the
// pause at Pause; never longer than Interval; none at all with Pause 0.
func TestASlowStatementLengthensThePause(t *testing.T) {
	t.Parallel()
	cfg := Config{Interval: time.Minute, BatchSize: 10, MaxBatches: 3, Pause: 100 * time.Millisecond}
	for _, tc := range []struct {
		name string
		cfg  Config
		took time.Duration
		want time.Duration
	}{
		{"fast", cfg, 10 * time.Millisecond, 100 * time.Millisecond},
		{"slow", cfg, 46 * time.Millisecond, 184 * time.Millisecond},
		{"very slow", cfg, 20 * time.Second, time.Minute},
		{"no pause", Config{Interval: time.Minute, BatchSize: 10, MaxBatches: 3, Pause: 0}, time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, waits := pacedCleaner(t, tc.cfg, tc.took)
			p, took, err := c.cleanOnce(context.Background())
			require.NoError(t, err)
			require.Equal(t, Pass{Hooks: 30, Attempts: 30, Batches: 3, More: true}, p)
			require.Equal(t, tc.took, took)
			require.Equal(t, []time.Duration{tc.want, tc.want}, *waits, "between the pass's statements")
			require.Equal(t, tc.want, c.nextPass(p, took, nil), "before the next pass")
			require.Equal(t, time.Minute, c.nextPass(Pass{Batches: 1}, took, nil), "after a pass that found less")
		})
	}
}

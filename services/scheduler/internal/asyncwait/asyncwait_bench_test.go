package asyncwait_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/scheduler/internal/asyncwait"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// BenchmarkSweep measures how fast ended async waits are settled as failed
// attempts, 500 per sweep (each sweep one transaction: the lock, the
// attempts' and the hooks' updates), by one scheduler.
func BenchmarkSweep(b *testing.B) {
	s := setup(b)
	hooks := s.waiting(b, b.N)
	for _, h := range hooks {
		_, err := s.q.ExpireAsyncWaitForTest(context.Background(), h.ID)
		require.NoError(b, err)
	}
	sw, err := asyncwait.New(store.New(s.pool), s.applier, asyncwait.Config{Interval: 1, BatchSize: 500}, slog.New(slog.DiscardHandler))
	require.NoError(b, err)
	b.ResetTimer()
	for settled := 0; settled < b.N; {
		n, err := sw.SweepOnce(context.Background())
		require.NoError(b, err)
		require.Positive(b, n)
		settled += n
	}
}

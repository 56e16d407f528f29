package result_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/result"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// BenchmarkApplySuccesses measures successful results applied per second,
// as the result consumer applies them: many handlers at once, each with
// an AttemptResults message of one leased hook's result. per_result is the path
// before batching (a transaction per result, 32 handlers: the old default
// concurrency); the others batch (1024 handlers, the new default). The
// pool has 16 connections, the scheduler's default. Run with a fixed
// count, e.g. -benchtime=20000x.
func BenchmarkApplySuccesses(b *testing.B) {
	for _, c := range []struct {
		name     string
		handlers int
		batch    result.BatchConfig
	}{
		// Batches of one, each on a connection of its own.
		{"per_result", 32, result.BatchConfig{MaxBatch: 1, InFlight: 16}},
		{"batch=100/inflight=4", 1024, result.BatchConfig{MaxBatch: 100, Linger: 2 * time.Millisecond, InFlight: 4}},
		{"batch=500/inflight=2", 1024, result.BatchConfig{MaxBatch: 500, Linger: 2 * time.Millisecond, InFlight: 2}},
		{"batch=500/inflight=4", 1024, result.BatchConfig{MaxBatch: 500, Linger: 2 * time.Millisecond, InFlight: 4}},
		{"batch=500/inflight=8", 1024, result.BatchConfig{MaxBatch: 500, Linger: 2 * time.Millisecond, InFlight: 8}},
	} {
		b.Run(c.name, func(b *testing.B) {
			handle, bodies := benchSetup(b, c.batch, b.N)
			header := nats.Header{event.TypeHeader: []string{event.TypeAttemptResults}}
			var next atomic.Int64
			var failed atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range c.handlers {
				wg.Go(func() {
					for i := next.Add(1) - 1; i < int64(len(bodies)); i = next.Add(1) - 1 {
						if handle(context.Background(), bus.Delivery{Subject: event.SubjectResult, Data: bodies[i], Header: header, NumDelivered: 1}) != nil {
							failed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			require.Zero(b, failed.Load(), "results not applied")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "results/s")
		})
	}
}

// benchSetup makes n leased hooks in a fresh database and the encoded
// success result of each, and returns the handler to apply them with.
func benchSetup(b *testing.B, cfg result.BatchConfig, n int) (bus.Handler, [][]byte) {
	b.Helper()
	ctx := context.Background()
	pool, err := postgres.Connect(ctx, pgtest.NewDB(b), 16)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	q := storetest.New(pool)
	project := fixture.Project(b, q, domain, fixed30)
	rows, err := q.InsertLeasedHooksForTest(ctx, storetest.InsertLeasedHooksForTestParams{ProjectID: project, N: int32(n)})
	require.NoError(b, err)
	bodies := make([][]byte, len(rows))
	started := timestamppb.New(time.Now().Add(-time.Second))
	for i, row := range rows {
		bodies[i] = resultsBody(b, &eventv1.AttemptResult{
			HookId: row.ID.String(), ProjectId: project.String(), Attempt: 1, LeaseSeq: row.LeaseSeq,
			Outcome: eventv1.Outcome_OUTCOME_SUCCESS, StatusCode: 200, StartedAt: started,
			Duration: durationpb.New(20 * time.Millisecond), ResponseExcerpt: "ok",
		})
	}
	// Successes publish nothing: no JetStream needed.
	applier, err := result.New(pool, nil, event.DefaultReplicas, slog.New(slog.NewTextHandler(io.Discard, nil)), lowJitter)
	require.NoError(b, err)
	batcher, err := applier.NewBatcher(cfg)
	require.NoError(b, err)
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); batcher.Run(runCtx) }()
	b.Cleanup(func() { cancel(); <-stopped })
	return batcher.Handle, bodies
}

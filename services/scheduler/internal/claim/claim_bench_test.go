package claim_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// BenchmarkClaim measures the poll's claim with the scheduler's defaults
// (batches of 500, a lease of 30 s, DueBatch 64): b.N hooks due at once,
// claimed and published until none is left. ns/op is per hook. Run with a
// fixed count, e.g. -benchtime=20000x.
func BenchmarkClaim(b *testing.B) {
	for _, c := range benchClaimCases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			pool, err := postgres.Connect(ctx, pgtest.NewDB(b), 16)
			require.NoError(b, err)
			b.Cleanup(pool.Close)
			_, js := natstest.Start(b, natstest.Options{}).Connect(b)
			require.NoError(b, event.EnsureStreams(ctx, js, event.DefaultReplicas))
			q := storetest.New(pool)
			project := fixture.Project(b, q, "receiver.example.com", defaults)
			if c.prepare != nil {
				c.prepare(b, q, project)
			}
			require.NoError(b, q.InsertDueHooksForTest(ctx, storetest.InsertDueHooksForTestParams{
				ProjectID: project, Domain: "receiver.example.com", N: int32(b.N)}))
			cl, err := claim.New(pool, js, claim.Config{BatchSize: 500, Lease: 30 * time.Second,
				PollInterval: time.Second, MaxRedrives: 5, DueBatch: 64}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			require.NoError(b, err)
			b.ResetTimer()
			claimed := 0
			for claimed < b.N {
				n, err := cl.ClaimOnce(ctx)
				require.NoError(b, err)
				require.Positive(b, n)
				claimed += n
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hooks/s")
		})
	}
}

// benchClaimCases: no breaker row (every domain healthy, the common case),
// and a paused domain of the same project holding 10,000 deferred hooks,
// which must cost the claim of the others nothing.
var benchClaimCases = []struct {
	name    string
	prepare func(b *testing.B, q *storetest.Queries, project uuid.UUID)
}{
	{name: "healthy"},
	{name: "beside-a-paused-domain-holding-10000", prepare: func(b *testing.B, q *storetest.Queries, project uuid.UUID) {
		ctx := context.Background()
		require.NoError(b, q.PausedDomainForTest(ctx, storetest.PausedDomainForTestParams{ProjectID: project, Domain: "down.example.com"}))
		require.NoError(b, q.InsertDueHooksForTest(ctx, storetest.InsertDueHooksForTestParams{
			ProjectID: project, Domain: "down.example.com", N: 10000}))
		// The first claim defers them to the pause's end, as a running
		// scheduler would have: they are no longer due.
		require.NoError(b, q.DeferPausedForTest(ctx, storetest.DeferPausedForTestParams{ProjectID: project, Domain: "down.example.com"}))
	}},
}

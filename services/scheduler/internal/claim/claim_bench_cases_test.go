package claim_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
)

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

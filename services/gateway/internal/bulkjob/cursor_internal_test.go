package bulkjob

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// TestCursorNamesTheLastJobOfAPage: a cursor gives back the created_at (to
// the microsecond, PostgreSQL's precision) and id it was made with; an
// altered one, or one that is no cursor, is refused naming cursor.
func TestCursorNamesTheLastJobOfAPage(t *testing.T) {
	t.Parallel()
	j := store.BulkJob{ID: uuid.Must(uuid.NewV7()), CreatedAt: time.Date(2030, 1, 2, 3, 4, 5, 678901000, time.UTC)}
	got, err := decodeCursor(encodeCursor(j))
	require.NoError(t, err)
	require.Equal(t, j.ID, got.ID)
	require.True(t, j.CreatedAt.Equal(got.CreatedAt), "%s against %s", got.CreatedAt, j.CreatedAt)
	first, err := decodeCursor("")
	require.NoError(t, err)
	require.Nil(t, first, "no cursor: from the newest")

	altered := []byte(encodeCursor(j))
	altered[len(altered)/2] ^= 1
	for _, bad := range []string{string(altered), "not base64!", "AQ", encodeCursor(j) + "AA"} {
		_, err := decodeCursor(bad)
		var invalid *bulk.InvalidError
		require.ErrorAs(t, err, &invalid, bad)
		require.Equal(t, "cursor", invalid.Problems[0].Field)
	}
}

func TestValidPage(t *testing.T) {
	t.Parallel()
	pg, err := ValidPage(nil, nil)
	require.NoError(t, err)
	require.Equal(t, Page{Limit: DefaultListed}, pg)
	for _, limit := range []int{0, MaxListed + 1} {
		_, err := ValidPage(&limit, nil)
		var invalid *bulk.InvalidError
		require.ErrorAs(t, err, &invalid)
		require.Equal(t, "limit", invalid.Problems[0].Field)
	}
	bad := "nope"
	_, err = ValidPage(nil, &bad)
	var invalid *bulk.InvalidError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "cursor", invalid.Problems[0].Field)
}

// TestJobFigures: what a job shows besides its columns.
func TestJobFigures(t *testing.T) {
	t.Parallel()
	base, exact := "/orders", "/orders?id=1"
	for name, tc := range map[string]struct {
		job      store.BulkJob
		progress float64
		skipped  int64
		key      *string
		ended    bool
	}{
		"not started":              {store.BulkJob{State: StateRunning, Total: 100}, 0, 0, nil, false},
		"half way":                 {store.BulkJob{State: StateRunning, Total: 100, Selected: 50, Affected: 45, PathBase: &base}, 0.5, 5, &base, false},
		"more than counted":        {store.BulkJob{State: StateCancelling, Total: 10, Selected: 20, Affected: 20, Path: &exact}, 1, 0, &exact, false},
		"completed short of total": {store.BulkJob{State: StateCompleted, Total: 100, Selected: 90, Affected: 80}, 1, 10, nil, true},
		"nothing to do":            {store.BulkJob{State: StateCompleted}, 1, 0, nil, true},
		"cancelled":                {store.BulkJob{State: StateCancelled, Total: 4, Selected: 1, Affected: 1}, 0.25, 0, nil, true},
		"failed before a batch":    {store.BulkJob{State: StateFailed}, 0, 0, nil, true},
	} {
		j := Job{BulkJob: tc.job}
		require.InDelta(t, tc.progress, j.Progress(), 1e-9, name)
		require.Equal(t, tc.skipped, j.Skipped(), name)
		require.Equal(t, tc.key, j.EndpointKey(), name)
		require.Equal(t, tc.ended, j.Ended(), name)
	}
}

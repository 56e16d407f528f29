package sequence

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// TestWithRunWrittenAhead: what the API shows of a sequence whose next run
// the scheduler wrote ahead, before and after the slot, and while a run
// written under an older revision waits to be withdrawn.
func TestWithRunWrittenAhead(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	rev := func(n int64) *int64 { return &n }
	for name, tc := range map[string]struct {
		row        store.Sequence
		next, last *time.Time
	}{
		"none written ahead": {
			row:  store.Sequence{NextRunAt: at(time.Hour), LastRunAt: at(-time.Hour)},
			next: at(time.Hour), last: at(-time.Hour)},
		"before its slot": {
			row:  store.Sequence{NextRunAt: at(time.Hour), LastRunAt: at(-time.Hour), PreparedSlot: at(30 * time.Second), Revision: 2, PreparedRevision: rev(2)},
			next: at(30 * time.Second), last: at(-time.Hour)},
		"after its slot": {
			row:  store.Sequence{NextRunAt: at(time.Hour), LastRunAt: at(-time.Hour), PreparedSlot: at(-time.Second), Revision: 2, PreparedRevision: rev(2)},
			next: at(time.Hour), last: at(-time.Second)},
		"first run, after its slot": {
			row:  store.Sequence{NextRunAt: at(time.Hour), PreparedSlot: at(-time.Second), PreparedRevision: rev(0)},
			next: at(time.Hour), last: at(-time.Second)},
		"paused since": {
			row:  store.Sequence{LastRunAt: at(-time.Hour), PreparedSlot: at(30 * time.Second), Revision: 3, PreparedRevision: rev(2)},
			next: nil, last: at(-time.Hour)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := withRunWrittenAhead(tc.row, now)
			require.Equal(t, tc.next, got.NextRunAt)
			require.Equal(t, tc.last, got.LastRunAt)
		})
	}
}

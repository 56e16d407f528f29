package check_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
)

// A key's arrivals must go hook by hook: a repeat of the hook last
// arrived is fine, a hook before its predecessor or behind a later one is
// not; hooks of no key are left out, and the handoffs are the gaps between
// a key's first arrivals.
func TestCheckOrder(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ids := make([][]uuid.UUID, 3)
	places := map[uuid.UUID]check.Place{}
	for k := range ids {
		for seq := range 3 {
			id := uuid.New()
			ids[k] = append(ids[k], id)
			places[id] = check.Place{Key: k, Seq: seq}
		}
	}
	arrivals := []check.Arrival{
		// Key 0 in order, its first hook twice in a row, listed out of
		// arrival order: the check sorts by instant.
		{ID: ids[0][1], At: at(30)},
		{ID: ids[0][0], At: at(10)},
		{ID: ids[0][0], At: at(15)},
		{ID: ids[0][2], At: at(70)},
		// Key 1: its third hook before its second, then the first again.
		{ID: ids[1][0], At: at(10)},
		{ID: ids[1][2], At: at(20)},
		{ID: ids[1][1], At: at(30)},
		{ID: ids[1][0], At: at(40)},
		// Key 2: its first hook never arrives.
		{ID: ids[2][1], At: at(10)},
		{ID: uuid.New(), At: at(5)},
	}
	o := check.CheckOrder(places, arrivals)
	require.Equal(t, 3, o.Keys)
	require.Equal(t, 2, o.Skipped, "key 1's third hook, key 2's second")
	require.Equal(t, 2, o.OutOfOrder, "key 1's second hook behind its third, and its first again")
	require.Equal(t, 4, o.Violations())
	require.Equal(t, 2, o.KeysViolated)
	require.Equal(t, 3, o.Handoff.Count, "key 0's two, key 1's second after its first")
	require.Equal(t, 20.0, o.Handoff.MinMs)
	require.Equal(t, 40.0, o.Handoff.MaxMs)

	inOrder := check.CheckOrder(places, arrivals[:4])
	require.Zero(t, inOrder.Violations())
	require.Zero(t, inOrder.KeysViolated)
	require.Equal(t, 2, inOrder.Handoff.Count)
}

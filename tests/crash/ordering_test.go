package crash

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/internal/checker"
)

// TestOrderingKeysKeepTheirOrderThroughADispatcherKill is issue 46's
// ordering under a crash: hooks of 20 ordering keys, 10 each, fall due
// together; the receiver holds the first deliveries (one per key at most:
// a key has one hook out at a time), the dispatcher is killed with SIGKILL
// and another started. Every hook must arrive, none lost, and each key's
// arrivals, the repeats of deliveries in flight at the kill included, must
// come in postAt order: a key's next hook is not sent before the previous
// one has completed.
func TestOrderingKeysKeepTheirOrderThroughADispatcherKill(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	const (
		keys     = 20
		perKey   = 10
		inFlight = 4
	)
	b := setup(t, options{hold: inFlight, lease: "20s"})
	b.startScheduler(t, nil)
	first := b.startDispatcher(t, inFlight)

	// postAt orders each key's hooks; its keys are interleaved in the
	// batch, so creation order does not.
	due := time.Now().Add(2 * time.Second).UTC().Truncate(time.Millisecond)
	type place struct{ key, seq int }
	placeOf := map[string]place{}
	var batch []map[string]any
	var places []place
	for seq := perKey - 1; seq >= 0; seq-- {
		for k := range keys {
			batch = append(batch, map[string]any{
				"path": "/ordered", "orderingKey": fmt.Sprintf("account-%d", k),
				"postAt": due.Add(time.Duration(seq) * time.Millisecond).Format(time.RFC3339Nano),
				"data":   map[string]any{"key": k, "seq": seq},
			})
			places = append(places, place{key: k, seq: seq})
		}
	}
	for start := 0; start < len(batch); start += 100 {
		resp, raw := b.api(0).Do(t, http.MethodPost, "/v1/hooks/batch", map[string]any{"hooks": batch[start : start+100]})
		require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /v1/hooks/batch: %s", raw)
		var created struct{ Data []hook }
		require.NoError(t, json.Unmarshal(raw, &created))
		require.Len(t, created.Data, 100)
		for i, h := range created.Data {
			b.accept(h)
			placeOf[h.ID] = places[start+i]
		}
	}

	select {
	case <-b.receiver.Held():
	case <-time.After(30 * time.Second):
		t.Fatalf("the receiver never held %d deliveries; got %d", inFlight, len(b.receiver.Blocked()))
	}
	first.Kill()
	killed := time.Now()
	b.receiver.Release()
	b.startDispatcher(t, inFlight)

	report := b.settle(t, 90*time.Second)
	// Only a delivery in flight at the kill may be repeated: one per key.
	b.requireClean(t, report, keys)
	b.requireRepeatedOnlyIfSentBefore(t, killed)

	arrivals := b.receiver.Arrivals()
	slices.SortStableFunc(arrivals, func(x, y checker.Arrival) int { return x.At.Compare(y.At) })
	last := map[int]int{}
	for k := range keys {
		last[k] = -1
	}
	for _, a := range arrivals {
		p, ok := placeOf[a.ID]
		require.True(t, ok, "arrival of a hook the test did not create: %s", a.ID)
		require.GreaterOrEqual(t, p.seq, last[p.key], "key %d: hook %d arrived after hook %d", p.key, p.seq, last[p.key])
		require.LessOrEqual(t, p.seq, last[p.key]+1, "key %d: hook %d arrived before hook %d", p.key, p.seq, last[p.key]+1)
		last[p.key] = p.seq
	}
	for k := range keys {
		require.Equal(t, perKey-1, last[k], "key %d", k)
	}
	t.Logf("%d keys of %d hooks, %d duplicate deliveries", keys, perKey, report.TotalDuplicates())
}

package dispatch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/report"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// A delivery frees its slot when its exchange is over, not when its
// result's batch is stored: with one slot and results lingering a second,
// the second hook of a message is delivered while the first one's result
// waits, and both results go in one batch. Holding the slot through the
// linger would deliver the second hook only after the first batch was
// published alone.
func TestADeliveryFreesItsSlotBeforeItsResultWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	lingering := runReporterWith(t, sender(b.js, report.DefaultRetry),
		report.BatchConfig{MaxBatch: 16, Linger: report.MaxLinger})
	h := b.handlerWith(t, dispatch.Config{Results: lingering, Concurrency: 1})
	t.Cleanup(h.Close)
	hooks, d := b.batch(t, 2)

	require.NoError(t, h.Handle(context.Background(), d))

	require.Len(t, b.receiver.Received(), 2)
	msgs := natstest.StreamMessages(t, b.js, event.StreamResults)
	require.Len(t, msgs, 1, "both results in one batch")
	var rs eventv1.AttemptResults
	require.NoError(t, proto.Unmarshal(msgs[0].Data, &rs))
	got := map[string]eventv1.Outcome{}
	for _, r := range rs.GetResults() {
		got[r.GetHookId()] = r.GetOutcome()
	}
	for _, due := range hooks {
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, got[due.GetHookId()], "hook %s", due.GetHookId())
	}
}

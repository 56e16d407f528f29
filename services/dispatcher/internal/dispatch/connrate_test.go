package dispatch_test

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/testkit/natstest"
)

func TestHandleDefersAHookWhoseHostUsedUpItsNewConnections(t *testing.T) {
	t.Parallel()
	// The receiver closes every connection; its host may open 8 at once
	// and then one a second, and a delivery waits at most a second for
	// one.
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusOK)
	})
	roots, err := egress.LoadRoots(fixture.CAFile(t, b.receiver))
	require.NoError(t, err)
	b.client, err = delivery.NewClient(delivery.Options{
		Timeout: 15 * time.Second, ExcerptBytes: 1024, HeaderPrefix: "Sundial", UserAgent: "Sundial/test",
		RootCAs: roots, Guard: egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
		HostConcurrency: 8, ConnectRate: 1,
	})
	require.NoError(t, err)
	t.Cleanup(b.client.Close)
	h := b.handlerWith(t, dispatch.Config{})
	// Sixteen hooks of one project (results of one hook would share a
	// Nats-Msg-Id).
	hooks, _ := b.batch(t, 16)

	// Twice 8 at once: the first 8 spend the burst. Of the next 8, unless
	// 7 s passed in between, some would wait more than a second for a
	// connection: they are deferred unsent (OUTCOME_DEFERRED, no attempt).
	handle := func(hooks []*eventv1.DueHook) {
		var wg sync.WaitGroup
		for _, due := range hooks {
			wg.Go(func() {
				require.NoError(t, h.Handle(context.Background(), fixture.Due(t, due)))
			})
		}
		wg.Wait()
	}
	handle(hooks[:8])
	handle(hooks[8:])
	byID := map[string]*eventv1.DueHook{}
	for _, due := range hooks {
		byID[due.GetHookId()] = due
	}
	deferred := 0
	for _, m := range natstest.StreamMessages(t, b.js, event.StreamResults) {
		var rs eventv1.AttemptResults
		require.NoError(t, proto.Unmarshal(m.Data, &rs))
		for _, r := range rs.GetResults() {
			if r.GetOutcome() == eventv1.Outcome_OUTCOME_DEFERRED {
				requireDeferred(t, byID[r.GetHookId()], r)
				deferred++
			}
		}
	}
	require.Positive(t, deferred)
	require.Len(t, b.receiver.Received(), 16-deferred, "a deferred delivery was sent")
}

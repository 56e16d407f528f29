package dispatch_test

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

func TestHandleHandsBackAHookWhoseHostUsedUpItsNewConnections(t *testing.T) {
	t.Parallel()
	// The receiver closes every connection; its host may open two at once
	// and then one a second, and a delivery waits at most a second for it.
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusOK)
	})
	roots, err := egress.LoadRoots(fixture.CAFile(t, b.receiver))
	require.NoError(t, err)
	b.client, err = delivery.NewClient(delivery.Options{
		Timeout: 5 * time.Second, ExcerptBytes: 1024, HeaderPrefix: "Sundial", UserAgent: "Sundial/test",
		RootCAs: roots, Guard: egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
		HostConcurrency: 2, ConnectRate: 1,
	})
	require.NoError(t, err)
	t.Cleanup(b.client.Close)
	h := b.handlerWith(t, dispatch.Config{Hosts: hostlimit.New(2)})
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	require.NoError(t, b.handle(t, h, due))
	require.NoError(t, b.handle(t, h, due))

	// Two more at once: one waits a second for the next connection, the
	// other would wait two and is handed back unsent.
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			errs <- h.Handle(context.Background(), bus.Delivery{Subject: event.SubjectDue, Data: fixture.Encode(t, due), NumDelivered: 1})
		})
	}
	wg.Wait()
	close(errs)
	var handedBack int
	for err := range errs {
		if err != nil {
			require.ErrorIs(t, err, delivery.ErrConnectionRate)
			require.False(t, bus.IsDrop(err))
			handedBack++
		}
	}
	require.Equal(t, 1, handedBack)
	require.Len(t, b.receiver.Received(), 3, "the handed-back delivery was not sent")
}

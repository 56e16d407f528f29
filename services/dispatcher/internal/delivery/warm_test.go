package delivery_test

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
)

// freshClient is a client with no connection yet, trusting caFile.
func freshClient(t *testing.T, caFile string) *delivery.Client {
	t.Helper()
	roots, err := egress.LoadRoots(caFile)
	require.NoError(t, err)
	client, err := delivery.NewClient(delivery.Options{
		Timeout: 5 * time.Second, ExcerptBytes: 64, HeaderPrefix: "Sundial", UserAgent: userAgent,
		RootCAs: roots, Guard: egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	return client
}

// burst sends n deliveries at once through a fresh client and requires
// each to succeed.
func burst(t *testing.T, r *fixture.Receiver, n int) {
	t.Helper()
	client := freshClient(t, fixture.CAFile(t, r))
	var wg sync.WaitGroup
	outcomes := make(chan eventv1.Outcome, n)
	for range n {
		wg.Go(func() {
			res, err := client.Send(context.Background(), request(r.URL+"/hooks", "whsec_k"))
			if err != nil {
				outcomes <- eventv1.Outcome_OUTCOME_UNSPECIFIED
				return
			}
			outcomes <- res.Outcome
		})
	}
	wg.Wait()
	close(outcomes)
	for o := range outcomes {
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, o)
	}
	require.Len(t, r.Received(), n)
}

func TestABurstToAColdHTTP2HostOpensOneConnection(t *testing.T) {
	t.Parallel()
	r := fixture.StartHTTP2Receiver(t, nil)
	burst(t, r, 32)
	require.Equal(t, 1, r.Conns(), "one TLS handshake, not one per delivery")
}

func TestABurstToAColdHTTP1HostStillRunsSideBySide(t *testing.T) {
	t.Parallel()
	// Each request holds its connection until all have arrived: over
	// HTTP/1.1 that needs one connection per request, opened once the
	// first has its own.
	const n = 8
	var arrived sync.WaitGroup
	arrived.Add(n)
	r := fixture.StartReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		arrived.Done()
		arrived.Wait()
		w.WriteHeader(http.StatusOK)
	})
	burst(t, r, n)
	require.Equal(t, n, r.Conns())
}

func TestAFailedFirstConnectionLetsTheOthersTry(t *testing.T) {
	t.Parallel()
	r := fixture.StartHTTP2Receiver(t, nil)
	client := freshClient(t, fixture.CAFile(t, r))
	url := r.URL
	r.Close() // nothing listens any more: every connect is refused
	const n = 8
	var wg sync.WaitGroup
	results := make(chan delivery.Result, n)
	for range n {
		wg.Go(func() {
			res, err := client.Send(context.Background(), request(url+"/hooks", "whsec_k"))
			if err == nil {
				results <- res
			}
		})
	}
	wg.Wait()
	close(results)
	require.Len(t, results, n, "every delivery got an answer of its own")
	for res := range results {
		require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
		require.Less(t, res.Duration, 5*time.Second, "no delivery waited out its deadline behind the first")
	}
}

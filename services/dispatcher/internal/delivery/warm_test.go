package delivery_test

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
)

// freshClient is a client with no connection yet, trusting caFile, with
// the default per-host bounds.
func freshClient(t *testing.T, caFile string) *delivery.Client {
	t.Helper()
	return limitedClient(t, caFile, 0, 0)
}

// limitedClient is freshClient allowing hostConcurrency new connections at
// once to a host and then connectRate a second (0: the defaults).
func limitedClient(t *testing.T, caFile string, hostConcurrency, connectRate int) *delivery.Client {
	t.Helper()
	roots, err := egress.LoadRoots(caFile)
	require.NoError(t, err)
	client, err := delivery.NewClient(delivery.Options{
		// Bursts of dozens of handshakes under the race detector on a
		// busy machine take seconds.
		Timeout: 15 * time.Second, ExcerptBytes: 64, HeaderPrefix: "Sundial", UserAgent: userAgent,
		RootCAs: roots, Guard: egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
		HostConcurrency: hostConcurrency, ConnectRate: connectRate,
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	return client
}

// burst sends n deliveries at once through a fresh client and requires
// each to succeed.
func burst(t *testing.T, r *fixture.Receiver, n int) {
	t.Helper()
	sendAtOnce(t, freshClient(t, fixture.CAFile(t, r)), r.URL+"/hooks", n)
	require.Len(t, r.Received(), n)
}

// sendAtOnce sends n deliveries to url at once through client and
// requires each to succeed.
func sendAtOnce(t *testing.T, client *delivery.Client, url string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			res, err := client.Send(context.Background(), request(url, "whsec_k"))
			require.NoError(t, err)
			require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome, res.Error)
		})
	}
	wg.Wait()
}

func TestAHostAtItsCeilingKeepsItsConnectionsAlive(t *testing.T) {
	t.Parallel()
	// Deliveries go over HTTP/1.1, a connection each: as many idle
	// connections per host are kept as the host may have deliveries in
	// flight, so a second burst at that concurrency opens none (with the
	// former 64 idle connections per host, 80 and then 16 more).
	const n = 80
	var first, second sync.WaitGroup
	first.Add(n)
	second.Add(n)
	r := fixture.StartHTTP2Receiver(t, func(w http.ResponseWriter, req *http.Request) {
		require.Equal(t, 1, req.ProtoMajor, "HTTP/1.1 although the receiver offers HTTP/2")
		wg := &first
		if req.URL.Path == "/second" {
			wg = &second
		}
		wg.Done()
		wg.Wait()
	})
	client := limitedClient(t, fixture.CAFile(t, r), n, 0)
	for _, path := range []string{"/first", "/second"} {
		sendAtOnce(t, client, r.URL+path, n)
	}
	require.Equal(t, n, r.Conns(), "the second burst reused the first one's connections")
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

func TestNewConnectionsResumeTheFirstTLSSession(t *testing.T) {
	t.Parallel()
	// One delivery, then 8 at once that each need a connection: the 7 new
	// ones resume the first connection's TLS session (its ticket came
	// with the first answer) instead of checking certificates again. In
	// a burst to a cold host the others dial as soon as the first
	// connection is up, and usually resume too (62 of 64 in trials).
	const n = 8
	var resumed atomic.Int64
	var arrived sync.WaitGroup
	arrived.Add(n)
	r := fixture.StartReceiver(t, func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/first" {
			return
		}
		if req.TLS.DidResume {
			resumed.Add(1)
		}
		arrived.Done()
		arrived.Wait()
	})
	client := freshClient(t, fixture.CAFile(t, r))
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, send(t, client, request(r.URL+"/first", "whsec_k")).Outcome)
	sendAtOnce(t, client, r.URL+"/hooks", n)
	require.Equal(t, n, r.Conns())
	require.EqualValues(t, n-1, resumed.Load(), "new connections that resumed the first one's session")
}

func TestAFailedFirstConnectionLetsTheOthersTry(t *testing.T) {
	t.Parallel()
	r := fixture.StartReceiver(t, nil)
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

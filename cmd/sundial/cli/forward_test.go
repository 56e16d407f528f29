package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sundial "github.com/sundial-run/sundial/sdk"
)

// localServer counts its connections and holds every request until the
// test releases the round it belongs to.
type localServer struct {
	srv      *httptest.Server
	conns    atomic.Int64
	inFlight atomic.Int64
	mu       sync.Mutex
	release  chan struct{}
}

func setupLocal(t *testing.T) *localServer {
	t.Helper()
	l := &localServer{release: make(chan struct{})}
	l.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		l.mu.Lock()
		release := l.release
		l.mu.Unlock()
		l.inFlight.Add(1)
		<-release
		l.inFlight.Add(-1)
	}))
	l.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			l.conns.Add(1)
		}
	}
	l.srv.Start()
	t.Cleanup(l.srv.Close)
	return l
}

// round forwards forwardInFlight deliveries at once, all held by the
// server until every one arrived, and waits for their answers.
func (l *localServer) round(t *testing.T, f *forwarder) {
	t.Helper()
	results := make(chan sundial.Result, forwardInFlight)
	for i := range forwardInFlight {
		go func() {
			d := &sundial.ListenDelivery{Delivery: sundial.Delivery{ID: "hook-" + strconv.Itoa(i), Path: "/hooks"},
				Forward: &sundial.ForwardRequest{Body: `{}`, Headers: map[string]string{"Content-Type": "application/json"}}}
			_, res := f.forward(t.Context(), d)
			results <- res
		}()
	}
	require.Eventually(t, func() bool { return l.inFlight.Load() == forwardInFlight }, 10*time.Second, time.Millisecond)
	l.mu.Lock()
	close(l.release)
	l.release = make(chan struct{})
	l.mu.Unlock()
	for range forwardInFlight {
		require.Equal(t, sundial.Ack(), <-results)
	}
}

// A burst forwarded forwardInFlight at a time reuses the connections of the
// one before: the forwarder keeps that many idle, not the default two.
func TestForwarderReusesConnections(t *testing.T) {
	t.Parallel()
	l := setupLocal(t)
	base, err := url.Parse(l.srv.URL)
	require.NoError(t, err)
	f := newForwarder(base)
	l.round(t, f)
	require.EqualValues(t, forwardInFlight, l.conns.Load())
	l.round(t, f)
	require.EqualValues(t, forwardInFlight, l.conns.Load(), "the second round opened connections")
}

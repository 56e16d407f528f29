package delivery_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/testkit/receiver"
)

// The client's own HTTP/1.1 exchange (conn.go, pool.go): what net/http's
// transport did for deliveries, it must still do.

// rawServer is a TLS server whose connections are handled by serve, one
// goroutine each; it counts the connections accepted.
type rawServer struct {
	addr  string
	conns atomic.Int64
}

func startRawServer(t *testing.T, serve func(conn net.Conn, in *bufio.Reader)) *rawServer {
	t.Helper()
	leaf, err := receiver.Certificate(false)
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{leaf}})
	require.NoError(t, err)
	s := &rawServer{addr: ln.Addr().String()}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	conns.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			mu.Lock()
			open = append(open, conn)
			mu.Unlock()
			conns.Go(func() {
				defer conn.Close()
				serve(conn, bufio.NewReader(conn))
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	return s
}

// readRequest reads one request and its body, reporting whether there was
// one.
func readRequest(in *bufio.Reader) bool {
	req, err := http.ReadRequest(in)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, req.Body)
	return true
}

func TestAConnectionTheReceiverClosedWhileIdleIsNotUsed(t *testing.T) {
	t.Parallel()
	// The receiver answers with keep-alive, then closes the connection a
	// moment later, as servers do at their idle timeout: the next
	// delivery must go on a new connection, not fail on the closed one.
	closed := make(chan struct{}, 1)
	s := startRawServer(t, func(conn net.Conn, in *bufio.Reader) {
		if !readRequest(in) {
			return
		}
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		_ = conn.Close()
		closed <- struct{}{}
	})
	client := freshClient(t, receiver.CAFile(t))
	for i := range 3 {
		res := send(t, client, request("https://"+s.addr+"/hooks", "whsec_k"))
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome, "delivery %d: %s", i, res.Error)
		require.Equal(t, "ok", res.Excerpt)
		<-closed
	}
	require.EqualValues(t, 3, s.conns.Load())
}

func TestInformationalAnswersAreSkipped(t *testing.T) {
	t.Parallel()
	s := startRawServer(t, func(conn net.Conn, in *bufio.Reader) {
		for readRequest(in) {
			_, _ = io.WriteString(conn, "HTTP/1.1 100 Continue\r\n\r\n"+
				"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"+
				"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	client := freshClient(t, receiver.CAFile(t))
	for range 2 {
		res := send(t, client, request("https://"+s.addr+"/hooks", "whsec_k"))
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome, res.Error)
		require.Equal(t, 200, res.StatusCode)
		require.Equal(t, "ok", res.Excerpt)
	}
	require.EqualValues(t, 1, s.conns.Load(), "the connection carried both")

	endless := startRawServer(t, func(conn net.Conn, in *bufio.Reader) {
		if readRequest(in) {
			_, _ = io.WriteString(conn, strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", 100))
		}
	})
	res := send(t, client, request("https://"+endless.addr+"/hooks", "whsec_k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.Equal(t, "connection error: too many 1xx informational responses", res.Error)
}

func TestAHostGetsAtMostItsConcurrencyInConnections(t *testing.T) {
	t.Parallel()
	// Four deliveries at once to a host allowed two connections: two wait
	// for a connection to come back, and none opens a third.
	const allowed, n = 2, 4
	// The first two hold their connections until both have arrived.
	var first sync.WaitGroup
	first.Add(allowed)
	var seen atomic.Int64
	r := fixture.StartReceiver(t, func(http.ResponseWriter, *http.Request) {
		if seen.Add(1) <= allowed {
			first.Done()
			first.Wait()
		}
	})
	sendAtOnce(t, limitedClient(t, fixture.CAFile(t, r), allowed, 0), r.URL+"/hooks", n)
	require.Len(t, r.Received(), n)
	require.Equal(t, allowed, r.Conns())
}

func TestAWaitForAConnectionEndsWithTheDeadline(t *testing.T) {
	t.Parallel()
	// One connection allowed and held by a receiver that never answers:
	// the second delivery waits for it within its own deadline only.
	release := make(chan struct{})
	r := fixture.StartReceiver(t, func(http.ResponseWriter, *http.Request) { <-release })
	t.Cleanup(func() { close(release) })
	client := limitedClient(t, fixture.CAFile(t, r), 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	go func() { _, _ = client.Send(ctx, request(r.URL+"/hold", "whsec_k")) }()
	r.WaitFor(t, 1)
	waiting, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer stop()
	_, err := client.Send(waiting, request(r.URL+"/hooks", "whsec_k"))
	require.ErrorIs(t, err, context.DeadlineExceeded, "handed back: nothing was sent")
	require.Equal(t, 1, r.Conns())
}

func TestALongBodyCostsTheConnectionNotTheDelivery(t *testing.T) {
	t.Parallel()
	// A body longer than what is drained to keep the connection: the
	// delivery succeeds and the next goes on a new connection; a short
	// body keeps it.
	r := fixture.StartReceiver(t, func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/long" {
			_, _ = io.WriteString(w, strings.Repeat("x", 1<<20))
			return
		}
		_, _ = io.WriteString(w, "short")
	})
	client := freshClient(t, fixture.CAFile(t, r))
	for _, path := range []string{"/short", "/short", "/long", "/short"} {
		res := send(t, client, request(r.URL+path, "whsec_k"))
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome, res.Error)
	}
	require.Equal(t, 2, r.Conns(), "the long body closed the first connection")
}

func TestAClosedClientStillDelivers(t *testing.T) {
	t.Parallel()
	r := fixture.StartReceiver(t, nil)
	client := freshClient(t, fixture.CAFile(t, r))
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, send(t, client, request(r.URL+"/hooks", "whsec_k")).Outcome)
	client.Close()
	client.Close()
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, send(t, client, request(r.URL+"/hooks", "whsec_k")).Outcome)
	require.Equal(t, 2, r.Conns(), "closing dropped the idle connection")
}

func TestAnAnswerThatEndsTheConnectionIsNotReused(t *testing.T) {
	t.Parallel()
	// Answers after which a connection cannot carry another delivery: a
	// protocol switch (a failure like any other non-2xx; the receiver
	// here would go on answering on it), and a body without a length,
	// which ends with the connection.
	for _, tc := range []struct {
		name, answer, outcome, error, excerpt string
		keepOpen                              bool
	}{
		{"switch", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
			"failure", "HTTP 101", "", true},
		{"no length", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nread to the close",
			"success", "", "read to the close", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startRawServer(t, func(conn net.Conn, in *bufio.Reader) {
				for readRequest(in) {
					_, _ = io.WriteString(conn, tc.answer)
					if !tc.keepOpen {
						return
					}
				}
			})
			client := freshClient(t, receiver.CAFile(t))
			for range 2 {
				res := send(t, client, request("https://"+s.addr+"/hooks", "whsec_k"))
				require.Equal(t, tc.outcome, strings.ToLower(strings.TrimPrefix(res.Outcome.String(), "OUTCOME_")))
				require.Equal(t, tc.error, res.Error)
				require.Equal(t, tc.excerpt, res.Excerpt)
			}
			require.EqualValues(t, 2, s.conns.Load(), "each delivery on a connection of its own")
		})
	}
}

func TestAnIdleConnectionKeepsNoLargeRequestBuffer(t *testing.T) {
	t.Parallel()
	// A 1 MiB payload's request buffer is dropped after its write, so a
	// pool of idle connections does not hold a megabyte each; a usual
	// one is kept for the next delivery.
	r := fixture.StartReceiver(t, nil)
	client := freshClient(t, fixture.CAFile(t, r))
	idleBuffer := func(data string) int {
		req := request(r.URL+"/hooks", "whsec_k")
		req.Data = json.RawMessage(data)
		res := send(t, client, req)
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome, res.Error)
		caps := delivery.IdleRequestBuffers(client)
		require.Len(t, caps, 1)
		return caps[0]
	}
	require.Positive(t, idleBuffer(`{"small":true}`))
	require.Zero(t, idleBuffer(`"`+strings.Repeat("x", 1<<20)+`"`))
	require.Positive(t, idleBuffer(`{"small":true}`))
}

func TestAnAnswerBeforeTheWholeBodyIsTheOutcome(t *testing.T) {
	t.Parallel()
	// The receiver answers 413 from the request's headers and closes
	// without reading the 16 MiB body (more than the sockets buffer): the client's write fails, but the
	// answer came, and it is the attempt's outcome (as with net/http's
	// transport), not a connection error.
	s := startRawServer(t, func(conn net.Conn, in *bufio.Reader) {
		if _, err := http.ReadRequest(in); err != nil {
			return
		}
		_, _ = io.WriteString(conn, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big!")
	})
	client := freshClient(t, receiver.CAFile(t))
	req := request("https://"+s.addr+"/hooks", "whsec_k")
	req.Data = json.RawMessage(`"` + strings.Repeat("x", 16<<20) + `"`)
	for i := range 2 {
		res := send(t, client, req)
		require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome, "delivery %d: %s", i, res.Error)
		require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "delivery %d: %s", i, res.Error)
		require.Equal(t, "too big!", res.Excerpt)
	}
	require.EqualValues(t, 2, s.conns.Load(), "the receiver closed each connection")
}

func TestWarmOpensAConnectionTheNextDeliveryUses(t *testing.T) {
	t.Parallel()
	// A hook waiting out its hold warms its host: the connection is
	// opened then, and the delivery at the due instant finds it idle.
	s := startRawServer(t, func(conn net.Conn, in *bufio.Reader) {
		for readRequest(in) {
			_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	client := freshClient(t, receiver.CAFile(t))
	url := "https://" + s.addr + "/hooks"
	require.NoError(t, client.Warm(t.Context(), url, 1))
	require.EqualValues(t, 1, s.conns.Load(), "the connection is open when Warm returns")
	require.NoError(t, client.Warm(t.Context(), url, 1))
	require.EqualValues(t, 1, s.conns.Load(), "a host with a connection is not warmed again")
	for range 2 {
		res := send(t, client, request(url, "whsec_k"))
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome, res.Error)
	}
	require.EqualValues(t, 1, s.conns.Load(), "the deliveries went on the warmed connection")

	// Warming dials as a delivery does: through the egress guard.
	require.Error(t, client.Warm(t.Context(), "https://10.9.8.7:443/hooks", 1))
	require.Error(t, client.Warm(t.Context(), "not a url", 1))
}

func TestWarmOpensAConnectionForEachHookOfACrowd(t *testing.T) {
	t.Parallel()
	// Hooks due at one instant go out side by side: warming opens a
	// connection for each, within the host's bound, and they find them
	// idle at their due instant.
	s := startRawServer(t, func(conn net.Conn, in *bufio.Reader) {
		for readRequest(in) {
			_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	client := limitedClient(t, receiver.CAFile(t), 4, 0)
	url := "https://" + s.addr + "/hooks"
	require.NoError(t, client.Warm(t.Context(), url, 3))
	require.EqualValues(t, 3, s.conns.Load(), "the connections are open when Warm returns")
	require.NoError(t, client.Warm(t.Context(), url, 2))
	require.EqualValues(t, 3, s.conns.Load(), "a host with enough connections is not warmed again")

	var crowd sync.WaitGroup
	for range 3 {
		crowd.Go(func() {
			res, err := client.Send(context.Background(), request(url, "whsec_k"))
			assert.NoError(t, err)
			assert.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome, res.Error)
		})
	}
	crowd.Wait()
	require.EqualValues(t, 3, s.conns.Load(), "the crowd went on the warmed connections")

	require.NoError(t, client.Warm(t.Context(), url, 100))
	require.EqualValues(t, 4, s.conns.Load(), "no more than the host's bound")
}

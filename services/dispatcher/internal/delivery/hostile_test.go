package delivery_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/testkit/receiver"
)

// Hostile receivers: what one of them does to a delivery stays with that
// delivery (docs/security.md, "One response, one delivery").

func TestAHeaderBombFailsOnlyItsOwnDelivery(t *testing.T) {
	t.Parallel()
	// 40 deliveries answered 200 and one answered with a 20 MB header, all
	// in flight at once to a receiver that offers HTTP/2: over one shared
	// HTTP/2 connection the bomb's COMPRESSION_ERROR failed the others.
	const others = 40
	// The others are answered once all have arrived and the bomb is out.
	var arrived sync.WaitGroup
	arrived.Add(others + 1)
	bombed := make(chan struct{})
	r := fixture.StartHTTP2Receiver(t, func(w http.ResponseWriter, req *http.Request) {
		arrived.Done()
		arrived.Wait()
		if req.URL.Path == "/bomb" {
			w.Header().Set("X-Bomb", strings.Repeat("b", 20<<20))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			close(bombed)
			return
		}
		<-bombed
		w.WriteHeader(http.StatusOK)
	})
	client := freshClient(t, fixture.CAFile(t, r))

	var wg sync.WaitGroup
	results := make(chan delivery.Result, others)
	var bomb delivery.Result
	wg.Go(func() {
		res, err := client.Send(context.Background(), request(r.URL+"/bomb", "whsec_k"))
		if err == nil {
			bomb = res
		}
	})
	for range others {
		wg.Go(func() {
			res, err := client.Send(context.Background(), request(r.URL+"/hooks", "whsec_k"))
			if err == nil {
				results <- res
			}
		})
	}
	wg.Wait()
	close(results)

	failed := 0
	for res := range results {
		if res.Outcome != eventv1.Outcome_OUTCOME_SUCCESS {
			failed++
			t.Logf("answered 200, recorded %s: %s", res.Outcome, res.Error)
		}
	}
	t.Logf("header bomb: %d of %d other deliveries failed", failed, others)
	require.Zero(t, failed, "the bomb failed other deliveries")
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, bomb.Outcome)
	require.Equal(t, "response headers larger than 64 KiB", bomb.Error)
	require.Zero(t, bomb.StatusCode)
}

// bigHeaderServer is a raw TLS server answering every request with a
// header of size bytes, counting what it managed to write on each
// connection before the client hung up.
type bigHeaderServer struct {
	addr    string
	mu      sync.Mutex
	written []int64
	done    sync.WaitGroup
}

func startBigHeaderServer(t *testing.T, size int) *bigHeaderServer {
	t.Helper()
	leaf, err := receiver.Certificate(false)
	require.NoError(t, err)
	config := &tls.Config{Certificates: []tls.Certificate{leaf}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &bigHeaderServer{addr: ln.Addr().String()}
	var conns sync.WaitGroup
	conns.Go(func() {
		for {
			raw, err := ln.Accept()
			if err != nil {
				return
			}
			// A small send buffer, so that what the server managed to
			// write is close to what the client took in (the kernel would
			// otherwise grow it to megabytes).
			_ = raw.(*net.TCPConn).SetWriteBuffer(16 << 10)
			conn := tls.Server(raw, config)
			s.done.Add(1)
			conns.Go(func() {
				defer s.done.Done()
				defer conn.Close()
				n := s.answer(conn, size)
				s.mu.Lock()
				s.written = append(s.written, n)
				s.mu.Unlock()
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Wait()
	})
	return s
}

// answer reads one request and writes the oversized answer in 16 KiB
// pieces until it is all out or the client has gone; it returns the
// header bytes written.
func (s *bigHeaderServer) answer(conn net.Conn, size int) int64 {
	req, err := http.ReadRequest(bufio.NewReader(conn))
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, req.Body)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nX-Big: "); err != nil {
		return 0
	}
	chunk := []byte(strings.Repeat("a", 16<<10))
	var written int64
	for written < int64(size) {
		n, err := conn.Write(chunk[:min(len(chunk), size-int(written))])
		written += int64(n)
		if err != nil {
			return written
		}
	}
	_, _ = io.WriteString(conn, "\r\nContent-Length: 0\r\n\r\n")
	return written
}

// wait waits until every connection's answer has ended.
func (s *bigHeaderServer) wait(t *testing.T) []int64 {
	t.Helper()
	ended := make(chan struct{})
	go func() { s.done.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's answers did not end within 10s")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.written...)
}

func TestTenMegabyteHeadersAreReadOnlyTo64KiB(t *testing.T) {
	t.Parallel()
	const n, size = 16, 10_000_000
	s := startBigHeaderServer(t, size)
	client := freshClient(t, receiver.CAFile(t))

	var wg sync.WaitGroup
	results := make(chan delivery.Result, n)
	for range n {
		wg.Go(func() {
			res, err := client.Send(context.Background(), request("https://"+s.addr+"/hooks", "whsec_k"))
			if err == nil {
				results <- res
			}
		})
	}
	wg.Wait()
	close(results)
	written := s.wait(t)
	var total, most int64
	for _, w := range written {
		total += w
		most = max(most, w)
	}
	t.Logf("10 MB headers: the server wrote %d KiB on %d connections, at most %d KiB on one", total>>10, len(written), most>>10)
	require.Len(t, results, n)
	for res := range results {
		require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
		require.Equal(t, "response headers larger than 64 KiB", res.Error)
	}
	require.Len(t, written, n)
	// The client stops reading at 64 KiB (and its 4 KiB read buffer);
	// what else the server got out sat in the two sockets' kernel
	// buffers when the client hung up.
	require.Less(t, most, int64(512<<10), "header bytes the server wrote on one connection before the client hung up")
}

func TestAServerThatClosesEveryConnectionGetsBoundedConnects(t *testing.T) {
	t.Parallel()
	// Every answer closes its connection, so every delivery would cost a
	// TCP connect and a TLS handshake: HTTP/2's GOAWAY on every
	// connection, in HTTP/1.1.
	hostile := fixture.StartReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusOK)
	})
	good := fixture.StartReceiver(t, nil)
	// 24 connections at once, then 20 a second. The dispatcher has at
	// most the host's ceiling (here 24) in flight to a host, and so does
	// this test: once the first 24 are spent, 24 deliveries at a time wait
	// up to 1.2 s for a connection, and those beyond a second's wait may
	// be handed back (ErrConnectionRate; how many depends on the
	// machine's pace, connrate_internal_test.go checks the rule).
	const burst, rate, workers, each = 24, 20, 24, 5
	client := limitedClient(t, fixture.CAFile(t, hostile), burst, rate)

	var hostileSent, deferred atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	var hostileDone sync.WaitGroup
	for range workers {
		hostileDone.Go(func() {
			for range each {
				res, err := client.Send(context.Background(), request(hostile.URL+"/hooks", "whsec_k"))
				switch {
				case errors.Is(err, delivery.ErrConnectionRate):
					deferred.Add(1)
				case err == nil && res.Outcome == eventv1.Outcome_OUTCOME_SUCCESS:
					hostileSent.Add(1)
				default:
					t.Errorf("delivery to the closing host: %+v, %v", res, err)
				}
			}
		})
	}
	goodResults := make(chan eventv1.Outcome, 100)
	for range 4 {
		wg.Go(func() {
			for range 25 {
				res, err := client.Send(context.Background(), request(good.URL+"/hooks", "whsec_k"))
				if err != nil {
					goodResults <- eventv1.Outcome_OUTCOME_UNSPECIFIED
					continue
				}
				goodResults <- res.Outcome
			}
		})
	}
	hostileDone.Wait()
	elapsed := time.Since(start)
	wg.Wait()
	close(goodResults)

	conns := hostile.Conns()
	t.Logf("closing host: %d connections in %s (%.0f/s), %d delivered, %d deferred; good host: %d connections",
		conns, elapsed, float64(conns)/elapsed.Seconds(), hostileSent.Load(), deferred.Load(), good.Conns())
	require.LessOrEqual(t, float64(conns), burst+rate*elapsed.Seconds()+1, "connections to the closing host")
	require.Equal(t, int64(conns), hostileSent.Load(), "each connection carried one delivery")
	require.Equal(t, int64(workers*each), hostileSent.Load()+deferred.Load())
	require.Len(t, goodResults, 100)
	for o := range goodResults {
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, o, "a delivery to the other host")
	}
}

func TestDeliveriesNeverOfferHTTP2(t *testing.T) {
	t.Parallel()
	// A receiver that would speak HTTP/2 is asked, in the TLS handshake
	// (ALPN), for HTTP/1.1 only: no HTTP/2 frame (GOAWAY, PING, SETTINGS,
	// WINDOW_UPDATE floods) can ever reach the dispatcher.
	offered := make(chan []string, 1)
	leaf, err := receiver.Certificate(false)
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{leaf},
		NextProtos:   []string{"h2", "http/1.1"},
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			select {
			case offered <- hello.SupportedProtos:
			default:
			}
			return nil, nil
		},
	})
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	client := freshClient(t, receiver.CAFile(t))
	res := send(t, client, request("https://"+ln.Addr().String()+"/hooks", "whsec_k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome)
	require.Equal(t, "HTTP/1.1", res.Excerpt)
	require.NotContains(t, <-offered, "h2")
}

func TestABodyCutShortAfterA200IsStillASuccess(t *testing.T) {
	t.Parallel()
	// The receiver answered 200 and then the connection broke: it has the
	// delivery, so the attempt is a success and the excerpt says why it
	// is short.
	r := fixture.StartReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	client := freshClient(t, fixture.CAFile(t, r))
	res := send(t, client, request(r.URL+"/hooks", "whsec_k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome)
	require.Equal(t, 200, res.StatusCode)
	require.Empty(t, res.Error)
	require.Equal(t, "partial [response body cut short: connection closed]", res.Excerpt)

	// A failure status stays a failure.
	failing := fixture.StartReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	res = send(t, freshClient(t, fixture.CAFile(t, failing)), request(failing.URL+"/hooks", "whsec_k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.Equal(t, "HTTP 503", res.Error)
	require.Equal(t, "[response body cut short: connection closed]", res.Excerpt)
}

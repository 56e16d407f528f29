package delivery_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/testkit/receiver"
)

// BenchmarkSendToOneHost is deliveries to one receiver that offers
// HTTP/2 and HTTP/1.1 and answers 200 at once, 64 at a time, through a
// client with the default options (docs/choices.md, "Delivery details":
// HTTP/1.1 against HTTP/2).
func BenchmarkSendToOneHost(b *testing.B) {
	r, opts := startBenchReceiver(b)
	client := newBenchClient(b, opts)
	req := request(r.URL()+"/hooks", "whsec_k")
	b.SetParallelism(64 / max(1, testingProcs()))
	before := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := client.Send(context.Background(), req)
			if err != nil || res.Outcome != eventv1.Outcome_OUTCOME_SUCCESS {
				b.Errorf("delivery: %+v, %v", res, err)
				return
			}
		}
	})
	b.StopTimer()
	reportCPU(b, before)
}

// BenchmarkExchangeFloor is BenchmarkSendToOneHost's deliveries without
// net/http's client: each worker prepares the delivery as Send does, writes
// it on a TLS connection of its own with one write and reads the answer
// with http.ReadResponse on the same goroutine (no pool, no connection
// goroutines, no hand-offs between them). It is no client Sundial could
// ship (no header limit, no stale-connection check, no 1xx handling): it
// measures how much of a delivery's CPU the transport's machinery takes,
// the lever a leaner client would have (docs/benchmarks.md, "The
// delivery's HTTP/1.1 exchange").
func BenchmarkExchangeFloor(b *testing.B) {
	r, opts := startBenchReceiver(b)
	client := newBenchClient(b, opts)
	tlsConfig := &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	req := request(r.URL()+"/hooks", "whsec_k")
	b.SetParallelism(64 / max(1, testingProcs()))
	before := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		conn, err := tls.Dial("tcp", r.Addr(), tlsConfig)
		if err != nil {
			b.Error(err)
			return
		}
		defer func() { _ = conn.Close() }()
		in := bufio.NewReader(conn)
		var out bytes.Buffer
		for pb.Next() {
			if err := exchangeOnce(conn, in, &out, client, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	reportCPU(b, before)
}

// exchangeOnce is one delivery of BenchmarkExchangeFloor, with the work
// per delivery that Send does around the exchange: the deadline, the
// URL, the prepared body and headers, the excerpt.
func exchangeOnce(conn *tls.Conn, in *bufio.Reader, out *bytes.Buffer, client *delivery.Client, r delivery.Request) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return err
	}
	p := client.Prepare(r, time.Now())
	out.Reset()
	fmt.Fprintf(out, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", u.RequestURI(), u.Host, len(p.Body))
	if err := p.Header.Write(out); err != nil {
		return err
	}
	out.WriteString("\r\n")
	out.Write(p.Body)
	if _, err := conn.Write(out.Bytes()); err != nil {
		return err
	}
	resp, err := http.ReadResponse(in, &http.Request{Method: http.MethodPost})
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1024))
	return err
}

// startBenchReceiver starts a receiver that offers HTTP/2 and HTTP/1.1 and
// answers 200 at once, and returns it with the default client options
// that trust it.
func startBenchReceiver(b *testing.B) (*receiver.Receiver, delivery.Options) {
	r := receiver.StartT(b, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(w, "ok")
	}), receiver.Options{HTTP2: true})
	roots, err := egress.LoadRoots(receiver.CAFile(b))
	require.NoError(b, err)
	return r, delivery.Options{
		Timeout: 10 * time.Second, ExcerptBytes: 1024, HeaderPrefix: "Sundial", UserAgent: userAgent,
		RootCAs: roots, Guard: egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
	}
}

// newBenchClient is a client with opts, closed when b ends.
func newBenchClient(b *testing.B, opts delivery.Options) *delivery.Client {
	client, err := delivery.NewClient(opts)
	require.NoError(b, err)
	b.Cleanup(client.Close)
	return client
}

// reportCPU reports the process's CPU (client and receiver) per operation
// since before: steadier than the rate on a shared machine.
func reportCPU(b *testing.B, before time.Duration) {
	b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBurstToAColdHost is 64 deliveries at once through a new client
// (no connection yet) to the same receiver: what a burst to a quiet host
// costs in connections and handshakes.
func BenchmarkBurstToAColdHost(b *testing.B) {
	r, opts := startBenchReceiver(b)
	req := request(r.URL()+"/hooks", "whsec_k")
	before := cpuTime(b)
	b.ResetTimer()
	for range b.N {
		client, err := delivery.NewClient(opts)
		require.NoError(b, err)
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				res, err := client.Send(context.Background(), req)
				if err != nil || res.Outcome != eventv1.Outcome_OUTCOME_SUCCESS {
					b.Errorf("delivery: %+v, %v", res, err)
				}
			})
		}
		wg.Wait()
		client.Close()
	}
	b.StopTimer()
	reportCPU(b, before)
}

// testingProcs is GOMAXPROCS, by which RunParallel multiplies its
// parallelism.
func testingProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkPrepare is building and signing one delivery's request (the
// body, the headers, the signature and the async URLs): what every
// delivery costs before its first byte is written.
func BenchmarkPrepare(b *testing.B) {
	client := newBenchClient(b, delivery.Options{
		Timeout: 10 * time.Second, HeaderPrefix: "Sundial", UserAgent: userAgent, PublicURL: "https://sundial.example.com",
		Guard: egress.NewGuard(false, nil),
	})
	req := request("https://example.com/hooks", "sdsig_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	req.AsyncSecret = []byte("0123456789abcdef0123456789abcdef")
	req.LeaseSeq = 42
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		p := client.Prepare(req, at)
		if len(p.Body) == 0 {
			b.Fatal("no body")
		}
	}
}

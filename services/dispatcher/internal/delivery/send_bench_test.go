package delivery_test

import (
	"context"
	"io"
	"net/http"
	"net/netip"
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
	r := receiver.StartT(b, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(w, "ok")
	}), receiver.Options{HTTP2: true})
	roots, err := egress.LoadRoots(receiver.CAFile(b))
	require.NoError(b, err)
	client, err := delivery.NewClient(delivery.Options{
		Timeout: 10 * time.Second, ExcerptBytes: 1024, HeaderPrefix: "Sundial", UserAgent: userAgent,
		RootCAs: roots, Guard: egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
	})
	require.NoError(b, err)
	b.Cleanup(client.Close)
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
	// CPU of the process (client and receiver) per delivery: steadier than
	// the rate on a shared machine.
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
	r := receiver.StartT(b, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(w, "ok")
	}), receiver.Options{HTTP2: true})
	roots, err := egress.LoadRoots(receiver.CAFile(b))
	require.NoError(b, err)
	req := request(r.URL()+"/hooks", "whsec_k")
	before := cpuTime(b)
	b.ResetTimer()
	for range b.N {
		client, err := delivery.NewClient(delivery.Options{
			Timeout: 10 * time.Second, ExcerptBytes: 1024, HeaderPrefix: "Sundial", UserAgent: userAgent,
			RootCAs: roots, Guard: egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
		})
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
	b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/float64(b.N), "cpu-µs/op")
}

// testingProcs is GOMAXPROCS, by which RunParallel multiplies its
// parallelism.
func testingProcs() int { return runtime.GOMAXPROCS(0) }

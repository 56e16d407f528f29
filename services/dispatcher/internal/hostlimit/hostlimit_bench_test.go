package hostlimit_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

// BenchmarkContendedHost is a burst to one host with more deliveries than
// the flow's limit: 128 goroutines (the dispatcher's default concurrency)
// take and give back slots of a flow limited to 16, so most of them wait
// at any time. What it measures is the cost of handing a freed slot on.
func BenchmarkContendedHost(b *testing.B) {
	l := hostlimit.New(hostlimit.Config{Ceiling: 256, Initial: 16})
	ctx := context.Background()
	b.SetParallelism(128 / max(1, runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s, _ := l.Acquire(ctx, projectA, 0, time.Minute)
			if s == nil {
				b.Error("no slot within a minute")
				return
			}
			s.Done(hostlimit.Sample{})
		}
	})
}

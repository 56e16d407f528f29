package bus_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
)

func TestPoolRunsEveryFunctionAtMostSizeAtOnce(t *testing.T) {
	t.Parallel()
	p := bus.NewPool(2)
	t.Cleanup(p.Close)
	const n = 6
	var running, peak, ran atomic.Int32
	started := make(chan struct{}, n)
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(n)
	go func() {
		for range n {
			p.Go(func() {
				defer wg.Done()
				now := running.Add(1)
				for {
					old := peak.Load()
					if now <= old || peak.CompareAndSwap(old, now) {
						break
					}
				}
				started <- struct{}{}
				<-release
				running.Add(-1)
				ran.Add(1)
			})
		}
	}()
	// Two run and block; a third cannot start until one returns.
	<-started
	<-started
	require.Len(t, started, 0)
	close(release)
	wg.Wait()
	require.EqualValues(t, n, ran.Load())
	require.LessOrEqual(t, peak.Load(), int32(2))
}

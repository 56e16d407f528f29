package bus

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// keeper tells JetStream, every interval, that each message whose handler
// is running is still being worked on, which restarts its AckWait. One
// goroutine does it for all of a Consume's messages: a ticker per message
// would cost a timer each for the few that outlive an interval.
type keeper struct {
	interval time.Duration
	mu       sync.Mutex
	msgs     map[jetstream.Msg]struct{}
}

func newKeeper(interval time.Duration) *keeper {
	return &keeper{interval: interval, msgs: make(map[jetstream.Msg]struct{})}
}

// keep keeps msg in progress until the returned function is called.
func (k *keeper) keep(msg jetstream.Msg) (stop func()) {
	k.mu.Lock()
	k.msgs[msg] = struct{}{}
	k.mu.Unlock()
	return func() {
		k.mu.Lock()
		delete(k.msgs, msg)
		k.mu.Unlock()
	}
}

// run starts the keeper's goroutine and returns the function that stops
// it and waits for it. A keeper of no interval (a consumer without an
// AckWait) keeps nothing.
func (k *keeper) run() (stop func()) {
	if k.interval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(k.interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				k.tell()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// tell restarts the AckWait of every message kept. InProgress only writes
// to the connection's buffer, so the lock is held briefly.
func (k *keeper) tell() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for msg := range k.msgs {
		_ = msg.InProgress()
	}
}

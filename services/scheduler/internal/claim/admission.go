package claim

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/scheduler/internal/batchratio"
)

// Backpressure. A claimed hook holds a lease; if it waits in the queues
// longer than that (dispatchers slower than the claims, results applied
// slower than they arrive), the lease expires, the dispatcher skips the
// stale DueHook or the hook is re-driven while its result is still queued,
// and the hook is delivered twice with no fault at all. So the schedulers
// claim only while the work waiting is below a bound: under overload hooks
// wait in PostgreSQL, where waiting costs nothing, and are claimed a
// little late instead of twice.
//
// The work waiting is the due messages no dispatcher has taken yet (the
// dispatcher consumer's pending count) and the results not yet applied
// (the results queue). A due message a dispatcher holds is not waiting:
// each dispatcher takes only what its delivery slots can start at once
// (bus.Consume), so what it holds is being delivered, and a message stays
// unacknowledged until its slowest hook is answered. Counting those would
// count a message of fifty hooks, one of them to a path that hangs for the
// delivery timeout, as fifty hooks waiting for ten seconds, and a domain
// with a few hanging paths would hold every claim back.

// inFlightRefresh is how often the queues are measured; between two
// measurements the claims made here are added to the last one, so a burst
// cannot overshoot the bound by more than the other schedulers' claims.
const inFlightRefresh = 50 * time.Millisecond

// backpressureWait is the wait before trying again while the queues are full.
const backpressureWait = 20 * time.Millisecond

// admission tracks the work in flight and how much more may be claimed.
type admission struct {
	js    jetstream.JetStream
	limit int // 0: no bound
	// perDue turns the due queue's messages into hooks (counted as this
	// scheduler publishes them; other schedulers are assumed to batch
	// alike), perResult the results queue's into results (counted as the
	// result batcher decodes them; nil: a message counts once).
	perDue    batchratio.Ratio
	perResult *batchratio.Ratio

	mu         sync.Mutex
	inFlight   int
	measuredAt time.Time
	measuring  bool
	// unreadable is set while the last measure failed.
	unreadable bool
}

// reserve returns how many hooks may be claimed now, at most want, and
// counts them in flight at once, so that claims running side by side do not
// each take the whole room; the caller releases what it did not claim. It
// uses the last measure of the queues, and when that is older than
// inFlightRefresh it starts a new one in the background: a NATS round trip
// on every claim would add its time to every hook's lateness. The first
// call measures before it answers. When the queues cannot be read (NATS
// away, a stream lost), it admits: the leases still protect the hooks, and
// holding claims back would only add lateness.
func (a *admission) reserve(ctx context.Context, want int) int {
	if a.limit == 0 {
		return want
	}
	a.mu.Lock()
	first := a.measuredAt.IsZero()
	a.mu.Unlock()
	if first {
		a.refresh(ctx)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.measuring && time.Since(a.measuredAt) >= inFlightRefresh {
		a.measuring = true
		go a.refresh(context.WithoutCancel(ctx))
	}
	n := max(min(want, a.limit-a.inFlight), 0)
	if a.unreadable {
		n = want
	}
	a.inFlight += n
	return n
}

// release gives back n hooks reserved and not claimed.
func (a *admission) release(n int) {
	if a.limit == 0 || n <= 0 {
		return
	}
	a.mu.Lock()
	a.inFlight = max(a.inFlight-n, 0)
	a.mu.Unlock()
}

// refresh measures the queues; after a failure reserve admits until a
// measure succeeds.
func (a *admission) refresh(ctx context.Context) {
	n, err := a.measure(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.measuring = false
	a.measuredAt = time.Now()
	a.unreadable = err != nil
	if err == nil {
		a.inFlight = n
	}
}

// measure counts the hooks waiting: the due messages no dispatcher has
// taken, weighed by the hooks a DueHooks batch carries, and the results
// queue's messages, weighed by the results an AttemptResults batch
// carries. Results are counted one by one because the messages waiting
// for their batch are held decoded in this process: while PostgreSQL
// applies results slower than they come, counting a batch of results once
// let claims go on until tens of thousands of results waited in memory.
func (a *admission) measure(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	due, err := a.untaken(ctx)
	if err != nil {
		return 0, err
	}
	results, err := a.js.Stream(ctx, event.StreamResults)
	if err != nil {
		return 0, err
	}
	return a.perDue.ItemsIn(due) + a.perResult.ItemsIn(int(results.CachedInfo().State.Msgs)), nil
}

// untaken is the number of due messages no dispatcher holds: the
// dispatcher consumer's pending ones, or, before any dispatcher created
// the consumer, the whole due queue.
func (a *admission) untaken(ctx context.Context) (int, error) {
	c, err := a.js.Consumer(ctx, event.StreamDue, event.ConsumerDispatcher)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		s, err := a.js.Stream(ctx, event.StreamDue)
		if err != nil {
			return 0, err
		}
		return int(s.CachedInfo().State.Msgs), nil
	}
	if err != nil {
		return 0, err
	}
	return int(c.CachedInfo().NumPending), nil
}

// countDue records the DueHooks messages of one claim in perDue.
func (a *admission) countDue(msgs []bus.Message) {
	n, hooks := 0, 0
	for _, m := range msgs {
		if m.Subject == event.SubjectDue {
			n++
			hooks += max(m.Items, 1)
		}
	}
	a.perDue.Count(n, hooks)
}

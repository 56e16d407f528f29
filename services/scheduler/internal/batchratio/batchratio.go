// Package batchratio follows how many items the messages of a queue carry,
// so that the queue's message count can be read as items. The scheduler's
// bound on work in flight counts hooks, while the due and results queues
// report messages, each a batch of many hooks or results.
package batchratio

import "sync"

// span is how many messages the sums cover before they are halved, so that
// recent messages weigh most.
const span = 1000

// Ratio is the running ratio of items to messages. Its zero value, and a
// nil *Ratio, read every message as one item until messages are counted.
// It is safe for concurrent use.
type Ratio struct {
	mu    sync.Mutex
	msgs  float64
	items float64
}

// Count records messages that carried items in all (a message of none
// counts as one item).
func (r *Ratio) Count(messages, items int) {
	if r == nil || messages <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs += float64(messages)
	r.items += float64(max(items, messages))
	if r.msgs > span {
		r.msgs, r.items = r.msgs/2, r.items/2
	}
}

// ItemsIn estimates the items in n messages.
func (r *Ratio) ItemsIn(n int) int {
	if r == nil {
		return n
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.msgs == 0 {
		return n
	}
	return int(float64(n) * r.items / r.msgs)
}

package claim

import (
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// DueHooks messages. One JetStream message per hook costs a publish, a
// stored message, a delivery to the dispatcher and its acknowledgement: in
// a burst that was the largest share of NATS's CPU and a visible one of the
// dispatcher's. So the hooks of one claim go out together, up to
// Config.DueBatch in a DueHooks message, and a dispatcher delivers them
// side by side. A batch never holds more than maxDueBatchBytes of hook data
// (one larger hook goes alone), so that a dispatcher pulling many messages
// at once holds a bounded amount of memory.
//
// A hook that goes alone is a DueHooks batch of one: the scheduler
// publishes one form only, which every dispatcher since batched DueHooks
// reads. A batch's Nats-Msg-Id (event.DuesMsgID) is derived from its hooks'
// ids and lease sequences alone, so the same claim's batch published again
// (a retried publish) is stored once, a batch of one included, while each
// claim, raising the lease sequence, gets ids of its own.

// maxDueBatchBytes bounds the hook data of one DueHooks message.
const maxDueBatchBytes = 256 << 10

// dueBatch gathers the DueHooks of one message.
type dueBatch struct {
	max   int
	hooks []*eventv1.DueHook
	bytes int
}

// fits reports whether due may join the batch without taking its hook
// data past maxDueBatchBytes; an empty batch takes any hook.
func (b *dueBatch) fits(due *eventv1.DueHook) bool {
	return len(b.hooks) == 0 || b.bytes+len(due.GetData()) <= maxDueBatchBytes
}

// add puts due in the batch and reports whether the batch is now full.
func (b *dueBatch) add(due *eventv1.DueHook) bool {
	b.hooks = append(b.hooks, due)
	b.bytes += len(due.GetData())
	return len(b.hooks) >= b.max
}

// take returns the batch's message and empties it.
func (b *dueBatch) take() bus.Message {
	hooks := b.hooks
	b.hooks, b.bytes = nil, 0
	return bus.DueHooks(hooks)
}

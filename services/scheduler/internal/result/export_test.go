package result

import "context"

// HandleResults applies decoded results as Batcher.Handle does after
// decoding them, for results the wire could not carry.
var HandleResults = (*Batcher).handleResults

// TakeRoom takes all of the batcher's room for decoding, as handlers of
// messages waiting for their batches would, and returns its release.
func (b *Batcher) TakeRoom() (release func()) {
	n := int64(b.cfg.MaxBytes)
	if err := b.room.Acquire(context.Background(), n); err != nil {
		panic(err)
	}
	return func() { b.room.Release(n) }
}

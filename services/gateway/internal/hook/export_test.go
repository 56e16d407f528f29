package hook

// Active is how many batched creates have started and not been answered:
// tests wait on it to know that creates are queued.
func (b *Batcher) Active() int64 {
	return b.active.Load()
}

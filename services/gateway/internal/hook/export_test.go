package hook

// Active is how many batched creates have started and not been answered:
// tests wait on it to know that creates are queued.
func (b *Batcher) Active() int64 {
	return b.active.Load()
}

// PlainPath, PlainProblem and EncodedProblem are the path rule's fast path
// and the general one, which must agree on every plain path.
var (
	PlainPath      = plainPath
	PlainProblem   = plainProblem
	EncodedProblem = encodedProblem
)

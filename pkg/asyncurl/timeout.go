package asyncurl

// Bounds of an async wait, in seconds, for the project's asyncTimeoutSecs and
// for a 202's Sundial-Async-Timeout alike (docs/product.md, "Async
// answers"): the gateway checks the first, the dispatcher reads the second,
// and the scheduler applies it.
const (
	MinTimeoutSecs = 1
	MaxTimeoutSecs = 24 * 60 * 60
)

// ValidTimeout reports whether an async wait of n seconds is within the
// bounds.
func ValidTimeout(n int64) bool {
	return n >= MinTimeoutSecs && n <= MaxTimeoutSecs
}

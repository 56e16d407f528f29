package hook

import (
	"crypto/sha256"
	"encoding/json"
	"time"
)

// fingerprintFields is the canonical form of a request for Idempotency-Key
// comparisons. It is built from the validated hook, so two requests are
// the same when they ask for the same hook: whitespace, the offset postAt
// was written in, or a postAtLocal that resolves to the same instant make
// no difference; a changed path, data, schedule or retryOverride does.
type fingerprintFields struct {
	Path          string          `json:"path"`
	Data          json.RawMessage `json:"data"`
	PostAt        *time.Time      `json:"postAt,omitempty"`
	PostInNanos   int64           `json:"postIn,omitempty"`
	RetryOverride json.RawMessage `json:"retryOverride,omitempty"`
}

// fingerprint is the SHA-256 of the hook's canonical form.
func (n New) fingerprint() ([]byte, error) {
	f := fingerprintFields{Path: n.Path, Data: n.Data, RetryOverride: n.RetryOverride}
	if n.PostAt != nil {
		at := n.PostAt.UTC()
		f.PostAt = &at
	} else {
		f.PostInNanos = int64(n.PostIn)
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return sum[:], nil
}

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

// batchFingerprint is the canonical form of a POST /v1/hooks/batch: its
// hooks' in order, under a name of its own, so that a batch of one and a
// single create of the same hook differ.
type batchFingerprint struct {
	Batch []fingerprintFields `json:"batch"`
}

// canonical is the hook's canonical form.
func (n New) canonical() fingerprintFields {
	f := fingerprintFields{Path: n.Path, Data: n.Data, RetryOverride: n.RetryOverride}
	if n.PostAt != nil {
		at := n.PostAt.UTC()
		f.PostAt = &at
	} else {
		f.PostInNanos = int64(n.PostIn)
	}
	return f
}

// fingerprint is the SHA-256 of the hook's canonical form.
func (n New) fingerprint() ([]byte, error) {
	return sum(n.canonical())
}

// fingerprint is the SHA-256 of the batch's canonical form.
func (b NewBatch) fingerprint() ([]byte, error) {
	f := batchFingerprint{Batch: make([]fingerprintFields, len(b.Hooks))}
	for i, n := range b.Hooks {
		f.Batch[i] = n.canonical()
	}
	return sum(f)
}

func sum(canonical any) ([]byte, error) {
	b, err := json.Marshal(canonical)
	if err != nil {
		return nil, err
	}
	s := sha256.Sum256(b)
	return s[:], nil
}

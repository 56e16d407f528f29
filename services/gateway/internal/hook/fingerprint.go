package hook

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"
)

// fingerprintFields is the canonical form of a request for Idempotency-Key
// comparisons. It is built from the validated hook, so two requests are
// the same when they ask for the same hook: whitespace, the order of an
// object's members (JSON objects are unordered, and many clients encode
// maps in random order), string escapes, the offset postAt was written in,
// or a postAtLocal that resolves to the same instant make no difference; a
// changed path, data, schedule, retryOverride, key, tags or orderingKey
// does. Numbers compare as written (1 and 1.0 differ).
type fingerprintFields struct {
	Path          string          `json:"path"`
	Data          json.RawMessage `json:"data"`
	PostAt        *time.Time      `json:"postAt,omitempty"`
	PostInNanos   int64           `json:"postIn,omitempty"`
	RetryOverride json.RawMessage `json:"retryOverride,omitempty"`
	// Key is left out when empty, so a request without one has the
	// fingerprint it had before hooks had keys.
	Key string `json:"key,omitempty"`
	// Tags, in the request's order, likewise.
	Tags []string `json:"tags,omitempty"`
	// OrderingKey likewise.
	OrderingKey string `json:"orderingKey,omitempty"`
}

// batchFingerprint is the canonical form of a POST /v1/hooks/batch: its
// hooks' in order, under a name of its own, so that a batch of one and a
// single create of the same hook differ.
type batchFingerprint struct {
	Batch []fingerprintFields `json:"batch"`
}

// canonical is the hook's canonical form.
func (n New) canonical() (fingerprintFields, error) {
	data, err := canonicalJSON(n.Data)
	if err != nil {
		return fingerprintFields{}, fmt.Errorf("data: %w", err)
	}
	retry, err := canonicalJSON(n.RetryOverride)
	if err != nil {
		return fingerprintFields{}, fmt.Errorf("retryOverride: %w", err)
	}
	f := fingerprintFields{Path: n.Path, Data: data, RetryOverride: retry, Key: n.Key, Tags: n.Tags, OrderingKey: n.OrderingKey}
	if n.PostAt != nil {
		at := n.PostAt.UTC()
		f.PostAt = &at
	} else {
		f.PostInNanos = int64(n.PostIn)
	}
	return f, nil
}

// canonicalJSON rewrites a JSON value with every object's members sorted
// by name (encoding/json sorts a map's keys) and strings re-escaped, so
// values equal by meaning have the same bytes. Numbers are kept as written
// (json.Number), never rounded through float64.
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// fingerprint is the SHA-256 of the hook's canonical form.
func (n New) fingerprint() ([]byte, error) {
	f, err := n.canonical()
	if err != nil {
		return nil, err
	}
	return sum(f)
}

// fingerprint is the SHA-256 of the batch's canonical form.
func (b NewBatch) fingerprint() ([]byte, error) {
	f := batchFingerprint{Batch: make([]fingerprintFields, len(b.Hooks))}
	for i, n := range b.Hooks {
		var err error
		if f.Batch[i], err = n.canonical(); err != nil {
			return nil, fmt.Errorf("hooks[%d].%w", i, err)
		}
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

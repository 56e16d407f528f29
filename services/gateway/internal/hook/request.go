// Package hook is the hook resource of the API: the request that schedules
// one (alone, or in a batch of them: batchrequest.go, createall.go) and its
// validation, the JSON a client sees, and the store operations behind POST,
// GET and DELETE.
package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sundial-run/sundial/pkg/retry"
)

// CreateRequest is the body of POST /v1/hooks. Pointers tell a field that
// was left out from one given empty.
type CreateRequest struct {
	Path          *string         `json:"path"`
	Data          json.RawMessage `json:"data"`
	PostAt        *string         `json:"postAt"`
	PostAtLocal   *string         `json:"postAtLocal"`
	Timezone      *string         `json:"timezone"`
	PostIn        *string         `json:"postIn"`
	RetryOverride *retry.Request  `json:"retryOverride"`
	Key           *string         `json:"key"`
	Tags          []string        `json:"tags"`
	OrderingKey   *string         `json:"orderingKey"`
}

// New is a validated hook, ready to be stored.
type New struct {
	Path string
	Data json.RawMessage
	// PostAt is when the hook is due; nil means PostIn from the database's
	// now, so that the database clock alone decides.
	PostAt *time.Time
	PostIn time.Duration
	// Local is the wall time PostAt was resolved from, for a hook scheduled
	// with postAtLocal; nil otherwise.
	Local *LocalTime
	// RetryOverride is the JSON the scheduler reads, nil for the project's
	// default retry settings.
	RetryOverride json.RawMessage
	// Key names the hook in its project while it is unfinished (see
	// ReplaceError), or is empty.
	Key string
	// Tags are the hook's tags in the request's order (tag.go), or nil.
	Tags []string
	// OrderingKey puts the hook in line with the project's other hooks of
	// that key, delivered one at a time (the scheduler's claim), or is
	// empty.
	OrderingKey string
	// IdempotencyKey is the request's Idempotency-Key header, validated by
	// idempotency.ValidateKey, or empty when it has none.
	IdempotencyKey string
}

// LocalTime is a wall time in an IANA zone: the hook keeps it, so that a
// scheduler with a newer tz database can resolve it again.
type LocalTime struct {
	// Wall holds the local date and time in its UTC fields.
	Wall time.Time
	Zone string
}

// wallLayout is how a wall time is stored and written: postAtLocal's.
const wallLayout = "2006-01-02T15:04:05"

// WallText is the wall time as postAtLocal writes it.
func (l *LocalTime) WallText() string { return l.Wall.Format(wallLayout) }

// columns are the local time as InsertHooks takes it: empty for none.
func (l *LocalTime) columns() (wall, zone string) {
	if l == nil {
		return "", ""
	}
	return l.WallText(), l.Zone
}

// FieldError is one field at fault.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// InvalidError lists every field at fault in a request.
type InvalidError struct {
	Problems []FieldError
}

func (e *InvalidError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Field + ": " + e.Problems[0].Message
	}
	return fmt.Sprintf("%d fields are invalid", len(e.Problems))
}

// TooLargeError is a data payload over the configured maximum, measured as
// stored (storedSize).
type TooLargeError struct {
	Size, Max int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("data is %d bytes as stored (compacted, with a space after each comma and colon, numbers written out), more than the maximum of %d", e.Size, e.Max)
}

// problems collects FieldErrors.
type problems []FieldError

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Validate checks the request and returns the hook to create. It reports a
// too-large data payload as a *TooLargeError before anything else, and all
// other problems at once as an *InvalidError.
func (r CreateRequest) Validate(maxDataBytes int) (New, error) {
	var p problems
	data, err := validData(r.Data, maxDataBytes, &p)
	if err != nil {
		return New{}, err
	}
	n := New{Data: data}
	n.Path = validPath(r.Path, &p)
	r.schedule(&n, &p)
	n.RetryOverride = r.validRetryOverride(&p)
	n.Key = validKey(r.Key, "key", &p)
	n.Tags = validTags(r.Tags, &p)
	n.OrderingKey = validKey(r.OrderingKey, "orderingKey", &p)
	if len(p) > 0 {
		return New{}, &InvalidError{Problems: p}
	}
	return n, nil
}

// validRetryOverride returns the JSON the scheduler reads, or nil for none
// or when it is at fault.
func (r CreateRequest) validRetryOverride(p *problems) json.RawMessage {
	raw, bad := r.RetryOverride.ValidateOverride()
	for _, b := range bad {
		p.add(b.Field, "%s", b.Message)
	}
	return raw
}

// validKey returns the key field names (the hook's key, or its ordering
// key: both are names a client makes up, with the same bounds), empty for
// none.
func validKey(key *string, field string, p *problems) string {
	if key == nil {
		return ""
	}
	if err := ValidateKey(*key); err != nil {
		p.add(field, "%s", err)
		return ""
	}
	return *key
}

// validData requires a JSON object and returns it compacted: the size limit
// applies to the payload, not to the client's indentation.
func validData(raw json.RawMessage, maxBytes int, p *problems) (json.RawMessage, error) {
	if len(raw) == 0 {
		p.add("data", "is required")
		return nil, nil
	}
	if raw[0] != '{' {
		p.add("data", "must be a JSON object")
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		p.add("data", "malformed JSON: %s", err)
		return nil, nil
	}
	// The limit applies to the data as it is stored and sent, which is
	// what must fit in a NATS message (storedSize).
	if size := storedSize(buf.Bytes()); size > maxBytes {
		return nil, &TooLargeError{Size: size, Max: maxBytes}
	}
	return buf.Bytes(), nil
}

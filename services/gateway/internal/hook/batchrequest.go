package hook

import (
	"errors"
	"fmt"
)

// MaxBatchHooks bounds the hooks of one POST /v1/hooks/batch: a batch is one
// transaction, and its body one buffer (see the API's body bound).
const MaxBatchHooks = 1000

// BatchRequest is the body of POST /v1/hooks/batch: each element is the
// body of a POST /v1/hooks.
type BatchRequest struct {
	Hooks []CreateRequest `json:"hooks"`
}

// NewBatch is a validated batch, ready to be stored: its hooks in the
// request's order.
type NewBatch struct {
	Hooks []New
	// IdempotencyKey is the request's Idempotency-Key header, validated by
	// idempotency.ValidateKey, or empty when it has none.
	IdempotencyKey string
}

// BatchInvalidError lists every field at fault in a batch, each named
// hooks[i].field after its hook. TooLarge is set when a hook's data is
// over the maximum (a *TooLargeError for a single create).
type BatchInvalidError struct {
	InvalidError
	TooLarge bool
}

// Validate checks every hook exactly as CreateRequest.Validate does and
// returns them, or a *BatchInvalidError naming every problem of every hook.
func (r BatchRequest) Validate(maxDataBytes int) (NewBatch, error) {
	var p problems
	if len(r.Hooks) < 1 || len(r.Hooks) > MaxBatchHooks {
		p.add("hooks", "must hold 1 to %d hooks, got %d", MaxBatchHooks, len(r.Hooks))
		return NewBatch{}, &BatchInvalidError{InvalidError: InvalidError{Problems: p}}
	}
	b := NewBatch{Hooks: make([]New, len(r.Hooks))}
	tooLarge := false
	for i, h := range r.Hooks {
		n, err := h.Validate(maxDataBytes)
		if err != nil {
			large, err := p.addHook(i, err)
			if err != nil {
				return NewBatch{}, err
			}
			tooLarge = tooLarge || large
			continue
		}
		b.Hooks[i] = n
	}
	p.addRepeatedKeys(b.Hooks)
	if len(p) > 0 {
		return NewBatch{}, &BatchInvalidError{InvalidError: InvalidError{Problems: p}, TooLarge: tooLarge}
	}
	return b, nil
}

// addHook adds the problems of hook i's validation error, and reports
// whether its data was too large; any other error is returned.
func (p *problems) addHook(i int, err error) (bool, error) {
	field := func(name string) string { return fmt.Sprintf("hooks[%d].%s", i, name) }
	var (
		tooLarge *TooLargeError
		invalid  *InvalidError
	)
	switch {
	case errors.As(err, &tooLarge):
		p.add(field("data"), "must be at most %d bytes as stored, is %d", tooLarge.Max, tooLarge.Size)
		return true, nil
	case errors.As(err, &invalid):
		for _, f := range invalid.Problems {
			p.add(field(f.Field), "%s", f.Message)
		}
		return false, nil
	}
	return false, fmt.Errorf("hooks[%d]: %w", i, err)
}

// addRepeatedKeys refuses a key given to two hooks of a batch: the second
// would replace the first, which the batch is creating.
func (p *problems) addRepeatedKeys(hooks []New) {
	first := make(map[string]int)
	for i, n := range hooks {
		if n.Key == "" {
			continue
		}
		if j, ok := first[n.Key]; ok {
			p.add(fmt.Sprintf("hooks[%d].key", i), "repeats hooks[%d].key; a batch's keys must differ", j)
			continue
		}
		first[n.Key] = i
	}
}

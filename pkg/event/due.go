package event

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// ErrUnknownType is the error of a message whose Sundial-Type header is
// missing or names a type its subject does not carry: it cannot be read,
// and redelivering it would not change that.
var ErrUnknownType = errors.New("unknown message type")

// DecodeDue decodes a message of the due subject, whose Sundial-Type
// header (typ) must be TypeDueHooks, into its hooks. Any other type, or
// none, is refused (ErrUnknownType): the subject carries no other form.
func DecodeDue(typ string, data []byte) ([]*eventv1.DueHook, error) {
	if typ != TypeDueHooks {
		return nil, fmt.Errorf("due message: %w %q (want %s)", ErrUnknownType, typ, TypeDueHooks)
	}
	var batch eventv1.DueHooks
	if err := proto.Unmarshal(data, &batch); err != nil {
		return nil, fmt.Errorf("decode DueHooks: %w", err)
	}
	return batch.GetHooks(), nil
}

// DecodeResults decodes a message of the results subject, whose
// Sundial-Type header (typ) must be TypeAttemptResults, into its results.
// Any other type, or none, is refused (ErrUnknownType): the subject
// carries no other form.
func DecodeResults(typ string, data []byte) ([]*eventv1.AttemptResult, error) {
	if typ != TypeAttemptResults {
		return nil, fmt.Errorf("results message: %w %q (want %s)", ErrUnknownType, typ, TypeAttemptResults)
	}
	var batch eventv1.AttemptResults
	if err := proto.Unmarshal(data, &batch); err != nil {
		return nil, fmt.Errorf("decode AttemptResults: %w", err)
	}
	return batch.GetResults(), nil
}

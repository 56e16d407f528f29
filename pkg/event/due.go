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
	batch, err := decodeBatch[eventv1.DueHooks](TypeDueHooks, typ, data)
	return batch.GetHooks(), err
}

// DecodeResults decodes a message of the results subject, whose
// Sundial-Type header (typ) must be TypeAttemptResults, into its results.
// Any other type, or none, is refused (ErrUnknownType): the subject
// carries no other form.
func DecodeResults(typ string, data []byte) ([]*eventv1.AttemptResult, error) {
	batch, err := decodeBatch[eventv1.AttemptResults](TypeAttemptResults, typ, data)
	return batch.GetResults(), err
}

// decodeBatch decodes data as the one message type a subject carries
// (want), refusing any other typ.
func decodeBatch[M any, PM interface {
	*M
	proto.Message
}](want, typ string, data []byte) (PM, error) {
	if typ != want {
		return nil, fmt.Errorf("message: %w %q (want %s)", ErrUnknownType, typ, want)
	}
	batch := PM(new(M))
	if err := proto.Unmarshal(data, batch); err != nil {
		return nil, fmt.Errorf("decode %s: %w", want, err)
	}
	return batch, nil
}

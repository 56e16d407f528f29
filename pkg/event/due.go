package event

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// DecodeDue decodes a message of the due subject by its Sundial-Type
// header (typ): a DueHooks batch, a HeldDueHooks batch (whose hooks may
// carry a hold), or a DueHook alone (no header, or TypeDueHook, what a
// scheduler of an earlier release sends) as a batch of one.
func DecodeDue(typ string, data []byte) ([]*eventv1.DueHook, error) {
	switch typ {
	case TypeDueHooks:
		var batch eventv1.DueHooks
		if err := proto.Unmarshal(data, &batch); err != nil {
			return nil, fmt.Errorf("decode DueHooks: %w", err)
		}
		return batch.GetHooks(), nil
	case TypeHeldDueHooks:
		var batch eventv1.HeldDueHooks
		if err := proto.Unmarshal(data, &batch); err != nil {
			return nil, fmt.Errorf("decode HeldDueHooks: %w", err)
		}
		return batch.GetHooks(), nil
	}
	var msg eventv1.DueHook
	if err := proto.Unmarshal(data, &msg); err != nil {
		return nil, fmt.Errorf("decode DueHook: %w", err)
	}
	return []*eventv1.DueHook{&msg}, nil
}

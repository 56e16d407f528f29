package bus

import (
	"slices"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// DueHooks is the message of a batch of due hooks: a claim's, as the
// scheduler publishes it, or the hooks a dispatcher hands back because it
// cannot deliver them now. Its id derives from the hooks, in order. When
// any hook carries a hold, the message is a HeldDueHooks, which only
// dispatchers that wait out the hold read (the proto's comment).
func DueHooks(hooks []*eventv1.DueHook) Message {
	m := Message{
		Subject: event.SubjectDue,
		MsgID:   event.DuesMsgID(leases(hooks)),
		Body:    &eventv1.DueHooks{Hooks: hooks},
		Type:    event.TypeDueHooks,
		Items:   len(hooks),
	}
	if slices.ContainsFunc(hooks, held) {
		m.Body, m.Type = &eventv1.HeldDueHooks{Hooks: hooks}, event.TypeHeldDueHooks
	}
	return m
}

// held reports whether a hook must wait before its delivery starts.
func held(h *eventv1.DueHook) bool { return h.GetHold().AsDuration() > 0 }

// AttemptResults is the message of a batch of attempt results, as the
// dispatcher publishes them. Its id derives from the results, in order.
func AttemptResults(results []*eventv1.AttemptResult) Message {
	return Message{
		Subject: event.SubjectResult,
		MsgID:   event.ResultsMsgID(leases(results)),
		Body:    &eventv1.AttemptResults{Results: results},
		Type:    event.TypeAttemptResults,
		Items:   len(results),
	}
}

// leased is an event about one lease of a hook.
type leased interface {
	GetHookId() string
	GetLeaseSeq() int64
}

// leases returns the hook id and lease sequence of each item, in order.
func leases[T leased](items []T) ([]string, []int64) {
	ids := make([]string, len(items))
	seqs := make([]int64, len(items))
	for i, it := range items {
		ids[i], seqs[i] = it.GetHookId(), it.GetLeaseSeq()
	}
	return ids, seqs
}

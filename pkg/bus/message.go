package bus

import (
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// DueHooks is the message of a batch of due hooks: a claim's, as the
// scheduler publishes it, or the hooks a dispatcher hands back because it
// cannot deliver them now; hooks may carry a hold. Its id derives from the
// hooks, in order.
func DueHooks(hooks []*eventv1.DueHook) Message {
	return Message{
		Subject: event.SubjectDue,
		MsgID:   event.DuesMsgID(leases(hooks)),
		Body:    &eventv1.DueHooks{Hooks: hooks},
		Type:    event.TypeDueHooks,
		Items:   len(hooks),
	}
}

// AttemptResults is the message of a batch of attempt results, as the
// dispatcher publishes them (and the scheduler the result of an attempt it
// gives up on). Its id derives from the results, in order.
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

package bus_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

func TestDueHooksMessage(t *testing.T) {
	t.Parallel()
	hooks := []*eventv1.DueHook{{HookId: "a", LeaseSeq: 1}, {HookId: "b", LeaseSeq: 2}}
	m := bus.DueHooks(hooks)
	require.Equal(t, event.SubjectDue, m.Subject)
	require.Equal(t, event.TypeDueHooks, m.Type)
	require.Equal(t, event.DuesMsgID([]string{"a", "b"}, []int64{1, 2}), m.MsgID)
	require.Equal(t, hooks, m.Body.(*eventv1.DueHooks).GetHooks())
	require.Equal(t, 2, m.Items)
}

// Hooks with a hold travel in the same message as hooks without.
func TestDueHooksMessageWithHolds(t *testing.T) {
	t.Parallel()
	hooks := []*eventv1.DueHook{{HookId: "a", LeaseSeq: 1, Hold: durationpb.New(time.Second)}, {HookId: "b", LeaseSeq: 2}}
	m := bus.DueHooks(hooks)
	require.Equal(t, event.TypeDueHooks, m.Type)
	require.Equal(t, hooks, m.Body.(*eventv1.DueHooks).GetHooks())
}

func TestAttemptResultsMessage(t *testing.T) {
	t.Parallel()
	results := []*eventv1.AttemptResult{{HookId: "a", LeaseSeq: 3}}
	m := bus.AttemptResults(results)
	require.Equal(t, event.SubjectResult, m.Subject)
	require.Equal(t, event.TypeAttemptResults, m.Type)
	require.Equal(t, event.ResultsMsgID([]string{"a"}, []int64{3}), m.MsgID)
	require.Equal(t, results, m.Body.(*eventv1.AttemptResults).GetResults())
	require.Equal(t, 1, m.Items)
}

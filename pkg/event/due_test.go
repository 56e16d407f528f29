package event_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

func heldHook() *eventv1.DueHook {
	return &eventv1.DueHook{
		HookId: uuid.NewString(), ProjectId: uuid.NewString(), Attempt: 1, LeaseSeq: 7,
		LeaseExpiresAt: timestamppb.New(time.Now().Add(30 * time.Second)),
		Url:            "https://r.example.com/p", Path: "/p", Data: []byte(`{"a":1}`),
		PostAt: timestamppb.Now(), Hold: durationpb.New(150 * time.Millisecond),
	}
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	data, err := proto.Marshal(m)
	require.NoError(t, err)
	return data
}

func TestDecodeDueReadsABatchWithItsHolds(t *testing.T) {
	t.Parallel()
	hooks := []*eventv1.DueHook{heldHook(), heldHook()}
	hooks[1].Hold = nil
	got, err := event.DecodeDue(event.TypeDueHooks, marshal(t, &eventv1.DueHooks{Hooks: hooks}))
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i := range hooks {
		require.True(t, proto.Equal(hooks[i], got[i]), i)
	}
}

// A due message of any other type, or of none, is refused, whatever its
// body: a DueHook alone (which a batch decodes as garbage or not at all),
// or a DueHooks under a wrong name.
func TestDecodeDueRefusesAnyOtherType(t *testing.T) {
	t.Parallel()
	hook := heldHook()
	batch := marshal(t, &eventv1.DueHooks{Hooks: []*eventv1.DueHook{hook}})
	alone := marshal(t, hook)
	for _, c := range []struct {
		typ  string
		data []byte
	}{
		{"", alone},
		{"", batch},
		{"sundial.event.v1.DueHook", alone},
		{"sundial.event.v1.HeldDueHooks", batch},
		{event.TypeAttemptResults, batch},
		{"sundial.event.v2.DueHooks", batch},
	} {
		got, err := event.DecodeDue(c.typ, c.data)
		require.ErrorIs(t, err, event.ErrUnknownType, "%q", c.typ)
		require.Nil(t, got, "%q", c.typ)
	}
}

func TestDecodeDueRefusesAMalformedBody(t *testing.T) {
	t.Parallel()
	_, err := event.DecodeDue(event.TypeDueHooks, []byte{0xff, 0xff, 0xff})
	require.Error(t, err)
	require.NotErrorIs(t, err, event.ErrUnknownType)
}

func TestDecodeResultsReadsABatch(t *testing.T) {
	t.Parallel()
	results := []*eventv1.AttemptResult{
		{HookId: uuid.NewString(), LeaseSeq: 3, Outcome: eventv1.Outcome_OUTCOME_SUCCESS, StatusCode: 200,
			TraceContext: map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
		{HookId: uuid.NewString(), LeaseSeq: 4, Outcome: eventv1.Outcome_OUTCOME_FAILURE, Error: "timeout"},
	}
	got, err := event.DecodeResults(event.TypeAttemptResults, marshal(t, &eventv1.AttemptResults{Results: results}))
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i := range results {
		require.True(t, proto.Equal(results[i], got[i]), i)
	}
}

func TestDecodeResultsRefusesAnyOtherType(t *testing.T) {
	t.Parallel()
	result := &eventv1.AttemptResult{HookId: uuid.NewString(), LeaseSeq: 3, Outcome: eventv1.Outcome_OUTCOME_SUCCESS}
	batch := marshal(t, &eventv1.AttemptResults{Results: []*eventv1.AttemptResult{result}})
	alone := marshal(t, result)
	for _, c := range []struct {
		typ  string
		data []byte
	}{
		{"", alone},
		{"", batch},
		{"sundial.event.v1.AttemptResult", alone},
		{event.TypeDueHooks, batch},
		{"sundial.event.v1.Nothing", batch},
	} {
		got, err := event.DecodeResults(c.typ, c.data)
		require.ErrorIs(t, err, event.ErrUnknownType, "%q", c.typ)
		require.Nil(t, got, "%q", c.typ)
	}
	_, err := event.DecodeResults(event.TypeAttemptResults, []byte{0xff, 0xff, 0xff})
	require.Error(t, err)
	require.NotErrorIs(t, err, event.ErrUnknownType)
}

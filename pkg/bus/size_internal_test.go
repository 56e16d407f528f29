package bus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// largestDueHook is a hook as large as the gateway lets one be besides its
// data: a path of 2,048 bytes (hook.MaxPathBytes), a domain of 253 bytes
// with a port, every number at its widest.
func largestDueHook(id int, data int) *eventv1.DueHook {
	path := "/" + strings.Repeat("p", 2047)
	now := timestamppb.New(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC))
	return &eventv1.DueHook{
		HookId:         fmt.Sprintf("01a217c5-d0a5-7727-8138-%012d", id),
		ProjectId:      "01a217c5-d0a5-7727-8138-c4c8ecc71b7c",
		Attempt:        1<<31 - 1,
		LeaseSeq:       1<<63 - 1,
		LeaseExpiresAt: now,
		Url:            "https://" + strings.Repeat("d", 253) + ":65535" + path,
		Path:           path,
		Data:           []byte(strings.Repeat("x", data)),
		PostAt:         now, CreatedAt: now, UpdatedAt: now,
		MaxAttempts:   1<<31 - 1,
		LeaseDuration: durationpb.New(1<<63 - 1),
	}
}

// wireSize is what NATS counts against max_payload for msg: its payload
// and its headers as sent, plus the W3C caps of the trace context that
// publishing may add (traceparent 55, tracestate 512, baggage 8,192 bytes,
// with their names).
func wireSize(t *testing.T, msg Message) int {
	t.Helper()
	nm, err := (&Publisher{}).encode(context.Background(), msg)
	require.NoError(t, err)
	headers := len("NATS/1.0\r\n\r\n")
	for k, vs := range nm.Header {
		for _, v := range vs {
			headers += len(k) + len(": \r\n") + len(v)
		}
	}
	trace := len("traceparent: \r\n") + 55 + len("tracestate: \r\n") + 512 + len("baggage: \r\n") + 8192
	return len(nm.Data) + headers + trace
}

func TestDueEnvelopeBoundsALoneHook(t *testing.T) {
	t.Parallel()
	data := int(MaxHookData(MinMaxPayload))
	msgs := SplitDue([]*eventv1.DueHook{largestDueHook(1, data)}, 0)
	require.Len(t, msgs, 1)
	size := wireSize(t, msgs[0])
	require.LessOrEqual(t, size, MinMaxPayload, "the largest hook the gateway accepts fits max_payload")
	require.Less(t, size-data, DueEnvelope-2<<10, "the envelope keeps a margin")
}

func TestSplitDueKeepsEveryMessageWithinMaxPayload(t *testing.T) {
	t.Parallel()
	// Hooks whose data is small but whose paths are not (what a bound on
	// data alone let grow to megabytes), and a few of the largest.
	var hooks []*eventv1.DueHook
	for i := range 1000 {
		size := 10
		if i%100 == 7 {
			size = int(MaxHookData(MinMaxPayload))
		}
		hooks = append(hooks, largestDueHook(i, size))
	}
	msgs := SplitDue(hooks, 1000)
	var got []*eventv1.DueHook
	for _, m := range msgs {
		batch := m.Body.(*eventv1.DueHooks).GetHooks()
		require.Equal(t, len(batch), m.Items)
		require.LessOrEqual(t, wireSize(t, m), MinMaxPayload)
		if len(batch) > 1 {
			require.LessOrEqual(t, proto.Size(m.Body), DueBatchBytes)
		}
		got = append(got, batch...)
	}
	require.Equal(t, hooks, got, "every hook, in order, once")
	require.Greater(t, len(msgs), 10)
}

func TestSplitDueHonoursTheCount(t *testing.T) {
	t.Parallel()
	hooks := make([]*eventv1.DueHook, 10)
	for i := range hooks {
		hooks[i] = &eventv1.DueHook{HookId: fmt.Sprint(i), Data: []byte(`{}`)}
	}
	msgs := SplitDue(hooks, 4)
	require.Len(t, msgs, 3)
	require.Equal(t, []int{4, 4, 2}, []int{msgs[0].Items, msgs[1].Items, msgs[2].Items})
	require.Len(t, SplitDue(hooks, 0), 1, "no count bound: bytes alone")
	require.Empty(t, SplitDue(nil, 4))
}

package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
)

func TestRetryingGivesUpAfterItsTries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	send := bus.Retrying{Publisher: e.pub, Retry: bus.RetryPolicy{Tries: 3, Backoff: time.Millisecond, Timeout: time.Second}}
	lost := alertMsg("nowhere")
	lost.Subject = "sundial.v1.no.stream"
	tries, err := send.PublishCounting(e.ctx, lost)
	require.Error(t, err)
	require.Equal(t, 3, tries)
}

func TestRetryingRecreatesLostStreams(t *testing.T) {
	t.Parallel()
	e := setup(t)
	require.NoError(t, e.js.DeleteStream(e.ctx, event.StreamAlerts))
	send := bus.Retrying{
		Publisher:     e.pub,
		Retry:         bus.RetryPolicy{Tries: 3, Backoff: time.Millisecond, Timeout: time.Second},
		EnsureStreams: func(ctx context.Context) error { return event.EnsureStreams(ctx, e.js, event.DefaultReplicas) },
	}
	tries, err := send.PublishCounting(e.ctx, alertMsg("a1"))
	require.NoError(t, err)
	require.Equal(t, 2, tries, "the first try found no stream; the second landed in the re-created one")
	require.Equal(t, uint64(1), e.streamMsgs(t))
}

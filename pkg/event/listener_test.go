package event_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
)

func TestListenerDeliverSubject(t *testing.T) {
	t.Parallel()
	require.Equal(t, "sundial.listen.deliver.0190a3c4-6f1e-7c2b-9d3e-1a2b3c4d5e6f",
		event.ListenerDeliverSubject("0190a3c4-6f1e-7c2b-9d3e-1a2b3c4d5e6f"))
}

func TestIsListenerFailure(t *testing.T) {
	t.Parallel()
	require.True(t, event.IsListenerFailure("listener: db locked"))
	require.True(t, event.IsListenerFailure("ack_timeout"))
	for _, https := range []string{"HTTP 500", "timeout after 10s", "connection refused", "", "ack_timeout after 10s"} {
		require.False(t, event.IsListenerFailure(https), https)
	}
}

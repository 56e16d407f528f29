package bus_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// TestWaitForLeaderTriesForItsWait publishes where no stream answers, as
// while a cluster elects a stream's leader: a plain publisher gives up
// after nats.go's two retries (0.5 s), a WaitForLeader publisher keeps
// trying for its wait, then fails the same way. (The cluster suite,
// tests/cluster, publishes through real elections.)
func TestWaitForLeaderTriesForItsWait(t *testing.T) {
	t.Parallel()
	_, js := natstest.Start(t, natstest.Options{}).Connect(t)
	msgs := []bus.Message{alertMsg("a1")}
	const wait = 2 * time.Second

	start := time.Now()
	_, err := bus.NewPublisher(js).PublishAll(t.Context(), msgs)
	require.True(t, event.IsStreamGone(err), "%v", err)
	require.Less(t, time.Since(start), wait*3/4)

	start = time.Now()
	_, err = bus.NewPublisher(js).WaitForLeader(wait).PublishAll(t.Context(), msgs)
	require.True(t, event.IsStreamGone(err), "%v", err)
	require.GreaterOrEqual(t, time.Since(start), wait*3/4)
}

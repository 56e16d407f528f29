package event_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/testkit/natstest"
)

func TestMsgIDFormat(t *testing.T) {
	t.Parallel()
	require.Equal(t, "alert:a-1:-1", event.MsgID(event.KindAlert, "a-1", -1))
	require.Equal(t, "alert:a-1:0", event.MsgID(event.KindAlert, "a-1", 0))
}

func TestMsgIDIsDeterministicAndDistinguishesOccurrences(t *testing.T) {
	t.Parallel()
	require.Equal(t, event.MsgID(event.KindAlert, "a1", 3), event.MsgID(event.KindAlert, "a1", 3),
		"the same event published twice must carry the same id")

	seen := map[string]string{}
	for _, id := range []string{"a1", "a2"} {
		for seq := range int64(3) {
			key := fmt.Sprintf("%s/%d", id, seq)
			msgID := event.MsgID(event.KindAlert, id, seq)
			require.NotContains(t, seen, msgID, "%s collides with %s", key, seen[msgID])
			seen[msgID] = key
		}
	}
}

func TestStreamsHaveUniqueNamesAndSubjects(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	subjects := map[string]string{}
	for _, s := range event.Streams(event.DefaultReplicas) {
		require.False(t, names[s.Name], "stream %s defined twice", s.Name)
		names[s.Name] = true
		require.NotEmpty(t, s.Subjects)
		for _, subj := range s.Subjects {
			other, dup := subjects[subj]
			require.False(t, dup, "subject %s in %s and %s", subj, s.Name, other)
			subjects[subj] = s.Name
		}
		require.Equal(t, jetstream.WorkQueuePolicy, s.Retention, s.Name)
		require.Equal(t, event.DuplicateWindow, s.Duplicates, s.Name)
		require.Positive(t, s.MaxAge, s.Name)
	}
	require.Equal(t, map[string]string{
		event.SubjectDue:    event.StreamDue,
		event.SubjectResult: event.StreamResults,
		event.SubjectAlert:  event.StreamAlerts,
	}, subjects)
}

func TestConsumersReadTheirStreams(t *testing.T) {
	t.Parallel()
	streams := map[string][]string{}
	for _, s := range event.Streams(event.DefaultReplicas) {
		streams[s.Name] = s.Subjects
	}
	durables := map[string]bool{}
	for _, c := range []event.Consumer{event.DispatcherConsumer(event.DefaultReplicas), event.SchedulerConsumer(event.DefaultReplicas), event.NotifierConsumer(event.DefaultReplicas)} {
		require.Contains(t, streams[c.Stream], c.Config.FilterSubject, c.Config.Durable)
		require.False(t, durables[c.Config.Durable], "durable %s used twice", c.Config.Durable)
		durables[c.Config.Durable] = true
		require.Equal(t, jetstream.AckExplicitPolicy, c.Config.AckPolicy, c.Config.Durable)
		require.GreaterOrEqual(t, c.Config.MaxAckPending, 1000, "%s: a bound for all replicas, not one process's", c.Config.Durable)
	}
}

func setup(t *testing.T) (context.Context, jetstream.JetStream) {
	t.Helper()
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	return t.Context(), js
}

func TestEnsureStreamsTwice(t *testing.T) {
	t.Parallel()
	ctx, js := setup(t)

	require.NoError(t, event.EnsureStreams(ctx, js, event.DefaultReplicas))
	require.NoError(t, event.EnsureStreams(ctx, js, event.DefaultReplicas))

	var got []string
	for name := range js.StreamNames(ctx).Name() {
		got = append(got, name)
	}
	require.ElementsMatch(t, []string{event.StreamDue, event.StreamResults, event.StreamAlerts}, got)
}

func TestEnsureStreamsKeepsMessages(t *testing.T) {
	t.Parallel()
	ctx, js := setup(t)
	require.NoError(t, event.EnsureStreams(ctx, js, event.DefaultReplicas))
	_, err := js.Publish(ctx, event.SubjectAlert, []byte("x"))
	require.NoError(t, err)

	require.NoError(t, event.EnsureStreams(ctx, js, event.DefaultReplicas))

	s, err := js.Stream(ctx, event.StreamAlerts)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), info.State.Msgs)
}

func TestEnsureStreamsUpdatesConfiguration(t *testing.T) {
	t.Parallel()
	ctx, js := setup(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      event.StreamAlerts,
		Subjects:  []string{event.SubjectAlert},
		Retention: jetstream.WorkQueuePolicy,
		MaxAge:    time.Hour,
	})
	require.NoError(t, err)

	require.NoError(t, event.EnsureStreams(ctx, js, event.DefaultReplicas))

	s, err := js.Stream(ctx, event.StreamAlerts)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, 7*24*time.Hour, info.Config.MaxAge)
	require.Equal(t, event.DuplicateWindow, info.Config.Duplicates)
}

func TestIsStreamGone(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		jetstream.ErrStreamNotFound,
		jetstream.ErrConsumerNotFound,
		jetstream.ErrConsumerDeleted,
		jetstream.ErrNoStreamResponse,
		fmt.Errorf("consume: %w", jetstream.ErrConsumerDeleted),
	} {
		require.True(t, event.IsStreamGone(err), "%v", err)
	}
	for _, err := range []error{nil, errors.New("stream not found"), context.Canceled, jetstream.ErrNoHeartbeat} {
		require.False(t, event.IsStreamGone(err), "%v", err)
	}
}

func TestIsStreamGoneOnARealMissingStream(t *testing.T) {
	t.Parallel()
	ctx, js := setup(t)

	_, err := js.Stream(ctx, event.StreamDue)
	require.True(t, event.IsStreamGone(err), "%v", err)

	_, err = js.Publish(ctx, event.SubjectDue, []byte("x"))
	require.Error(t, err)
	require.True(t, event.IsStreamGone(err), "%v", err)
	require.False(t, strings.Contains(err.Error(), "timeout"), "a publish with no stream fails fast: %v", err)
}

func TestResultsMsgIDIsDeterministic(t *testing.T) {
	t.Parallel()
	ids, seqs := []string{"a", "b"}, []int64{1, 2}
	id := event.ResultsMsgID(ids, seqs)
	require.Equal(t, id, event.ResultsMsgID([]string{"a", "b"}, []int64{1, 2}), "the same batch, the same id")
	require.True(t, strings.HasPrefix(id, event.KindResults+":"))
	require.True(t, strings.HasSuffix(id, ":2"), "ends with the count")
	require.NotEqual(t, id, event.ResultsMsgID([]string{"a", "b"}, []int64{1, 3}), "another lease")
	require.NotEqual(t, id, event.ResultsMsgID([]string{"b", "a"}, []int64{2, 1}), "another order")
	require.NotEqual(t, id, event.ResultsMsgID([]string{"a"}, []int64{1}))
}

func TestDuesMsgIDIsDeterministicAndApartFromResults(t *testing.T) {
	t.Parallel()
	ids, seqs := []string{"a", "b"}, []int64{1, 2}
	id := event.DuesMsgID(ids, seqs)
	require.Equal(t, id, event.DuesMsgID([]string{"a", "b"}, []int64{1, 2}), "the same batch, the same id")
	require.True(t, strings.HasPrefix(id, event.KindDues+":"))
	require.NotEqual(t, id, event.DuesMsgID([]string{"a", "b"}, []int64{1, 3}), "another lease")
	require.NotEqual(t, id, event.ResultsMsgID(ids, seqs), "a batch of results never shares a due batch's id")
}

func TestCheckReplicas(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 5} {
		require.NoError(t, event.CheckReplicas(n), n)
	}
	for _, n := range []int{0, -1, 6} {
		err := event.CheckReplicas(n)
		require.ErrorContains(t, err, fmt.Sprintf("SUNDIAL_STREAM_REPLICAS=%d: want 1 to 5", n))
	}
}

func TestStreamsAndConsumersTakeTheReplicas(t *testing.T) {
	t.Parallel()
	for _, s := range event.Streams(3) {
		require.Equal(t, 3, s.Replicas, s.Name)
	}
	for _, c := range []event.Consumer{event.DispatcherConsumer(3), event.SchedulerConsumer(3), event.NotifierConsumer(3)} {
		require.Equal(t, 3, c.Config.Replicas, c.Config.Durable)
	}
}

// streamInfo reads a stream's info from the server.
func streamInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	s, err := js.Stream(t.Context(), name)
	require.NoError(t, err)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	return info
}

// TestEnsureStreamsRescalesOnACluster starts Sundial's streams and a
// consumer at one replica on a three-server cluster, as a deployment
// before SUNDIAL_STREAM_REPLICAS=3, then ensures them at three: the
// streams and the consumer are updated in place and keep their messages;
// and back to one.
func TestEnsureStreamsRescalesOnACluster(t *testing.T) {
	t.Parallel()
	c := natstest.StartCluster(t, 3)
	_, js := c.Connect(t)
	ctx := t.Context()
	require.NoError(t, event.EnsureStreams(ctx, js, 1))
	_, err := js.CreateOrUpdateConsumer(ctx, event.StreamDue, event.DispatcherConsumer(1).Config)
	require.NoError(t, err)
	_, err = js.Publish(ctx, event.SubjectDue, []byte("kept"))
	require.NoError(t, err)

	for _, replicas := range []int{3, 1} {
		require.NoError(t, event.EnsureStreams(ctx, js, replicas))
		dispatcher := event.DispatcherConsumer(replicas)
		cons, err := js.CreateOrUpdateConsumer(ctx, dispatcher.Stream, dispatcher.Config)
		require.NoError(t, err, "replicas %d", replicas)
		require.Equal(t, replicas, cons.CachedInfo().Config.Replicas)
		for _, s := range event.Streams(replicas) {
			require.Equal(t, replicas, streamInfo(t, js, s.Name).Config.Replicas, s.Name)
		}
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			info := streamInfo(t, js, event.StreamDue)
			assert.Len(c, info.Cluster.Replicas, replicas-1, "followers of the leader")
			assert.Equal(c, uint64(1), info.State.Msgs, "the message is kept")
		}, 30*time.Second, 50*time.Millisecond)
	}
}

func TestEnsureStreamsNeedsAClusterForReplicas(t *testing.T) {
	t.Parallel()
	ctx, js := setup(t)
	err := event.EnsureStreams(ctx, js, 3)
	require.ErrorContains(t, err, "create stream "+event.StreamDue+" with 3 replicas")

	require.NoError(t, event.EnsureStreams(ctx, js, 1))
	err = event.EnsureStreams(ctx, js, 3)
	require.ErrorContains(t, err, "update stream "+event.StreamDue+" (replicas 1 to 3)")
	require.ErrorContains(t, err, "replicas > 1 not supported in non-clustered mode", "the server's reason")
}

// TestEnsureStreamsRefusesFixedSettings finds a stream made by hand with
// memory storage and limits retention, which JetStream cannot change: the
// error names the stream, both settings, both values and the fix, and the
// stream is left as it was.
func TestEnsureStreamsRefusesFixedSettings(t *testing.T) {
	t.Parallel()
	ctx, js := setup(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: event.StreamResults, Subjects: []string{event.SubjectResult},
		Storage: jetstream.MemoryStorage, Retention: jetstream.LimitsPolicy,
	})
	require.NoError(t, err)

	err = event.EnsureStreams(ctx, js, 1)
	require.ErrorIs(t, err, event.ErrFixedSetting)
	for _, want := range []string{
		"stream SUNDIAL_RESULTS has storage Memory, Sundial wants File",
		"stream SUNDIAL_RESULTS has retention Limits, Sundial wants WorkQueue",
		"nats stream rm SUNDIAL_RESULTS",
	} {
		require.ErrorContains(t, err, want)
	}
	info := streamInfo(t, js, event.StreamResults)
	require.Equal(t, jetstream.MemoryStorage, info.Config.Storage, "left alone")
}

// TestEnsureStreamsKeepsTheOperatorsSettings updates a stream whose
// settings Sundial owns differ, and keeps a limit an operator added.
func TestEnsureStreamsKeepsTheOperatorsSettings(t *testing.T) {
	t.Parallel()
	ctx, js := setup(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: event.StreamDue, Subjects: []string{event.SubjectDue},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		MaxAge: time.Minute, MaxBytes: 64 << 20,
	})
	require.NoError(t, err)

	require.NoError(t, event.EnsureStreams(ctx, js, 1))

	info := streamInfo(t, js, event.StreamDue)
	require.Equal(t, time.Hour, info.Config.MaxAge, "Sundial's")
	require.Equal(t, int64(64<<20), info.Config.MaxBytes, "the operator's")
}

// TestEnsureStreamsNamesTheServerItCannotReach: with no NATS server at the
// configured address, EnsureStreams fails naming the address, without its
// credentials, and the setting that gives it.
func TestEnsureStreamsNamesTheServerItCannotReach(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	nc, js, err := bus.Connect("nats://sundial:hunter2@"+addr, "test")
	require.NoError(t, err, "the connection retries in the background")
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err = event.EnsureStreams(ctx, js, 1)
	require.ErrorContains(t, err, "NATS at nats://"+addr+" (SUNDIAL_NATS_URL)")
	require.NotContains(t, err.Error(), "hunter2")
}

package report

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/testkit/natstest"
)

type bundle struct {
	js      jetstream.JetStream
	batcher *Batcher
	// stop cancels Run's context; stopped is closed when Run returns.
	stop    context.CancelFunc
	stopped chan struct{}
}

func setup(t *testing.T, cfg BatchConfig) bundle {
	t.Helper()
	_, js := natstest.Start(t, natstest.Options{}).Connect(t)
	require.NoError(t, event.EnsureStreams(context.Background(), js, event.DefaultReplicas))
	b, err := NewBatcher(cfg, bus.Retrying{Publisher: bus.NewPublisher(js), Retry: DefaultRetry,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return bundle{js: js, batcher: b, stop: cancel, stopped: stopped}
}

func result(i int) *eventv1.AttemptResult {
	return &eventv1.AttemptResult{HookId: fmt.Sprintf("00000000-0000-0000-0000-%012d", i), LeaseSeq: int64(i),
		Attempt: 1, Outcome: eventv1.Outcome_OUTCOME_SUCCESS, StatusCode: 200}
}

// reportAll reports n results at once, as concurrent deliveries do, and
// returns a channel that yields each Report's answer.
func (b bundle) reportAll(n int) <-chan error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs <- b.batcher.Report(context.Background(), result(i)) })
	}
	go func() { wg.Wait(); close(errs) }()
	return errs
}

func requireAllNil(t *testing.T, errs <-chan error) {
	t.Helper()
	for err := range errs {
		require.NoError(t, err)
	}
}

// messages reads the results stream: each message's type header and the
// results it carries.
func (b bundle) messages(t *testing.T) [][]*eventv1.AttemptResult {
	t.Helper()
	ctx := context.Background()
	s, err := b.js.Stream(ctx, event.StreamResults)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	var out [][]*eventv1.AttemptResult
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		require.Equal(t, event.TypeAttemptResults, m.Header.Get(event.TypeHeader))
		require.Contains(t, m.Header.Get(jetstream.MsgIDHeader), event.KindResults+":")
		var rs eventv1.AttemptResults
		require.NoError(t, proto.Unmarshal(m.Data, &rs))
		out = append(out, rs.GetResults())
	}
	return out
}

func TestBatchFlushesWhenFull(t *testing.T) {
	t.Parallel()
	// A linger far longer than the test: only a full batch goes out.
	b := setup(t, BatchConfig{MaxBatch: 3, Linger: MaxLinger})
	requireAllNil(t, b.reportAll(6))
	msgs := b.messages(t)
	require.Len(t, msgs, 2)
	for _, rs := range msgs {
		require.Len(t, rs, 3)
	}
}

func TestBatchFlushesAfterLinger(t *testing.T) {
	t.Parallel()
	b := setup(t, BatchConfig{MaxBatch: 100, Linger: time.Millisecond})
	requireAllNil(t, b.reportAll(1))
	msgs := b.messages(t)
	require.Len(t, msgs, 1)
	require.Len(t, msgs[0], 1)
	require.Equal(t, result(0).GetHookId(), msgs[0][0].GetHookId())
}

func TestBatchFlushesOnShutdown(t *testing.T) {
	t.Parallel()
	b := setup(t, BatchConfig{MaxBatch: 100, Linger: MaxLinger})
	// Submitted the way Report does, so that both are known to be in the
	// lingering batch when the stop comes.
	var jobs []*job
	for i := range 2 {
		j, err := b.batcher.queue.Submit(context.Background(), result(i))
		require.NoError(t, err)
		jobs = append(jobs, j)
	}
	b.stop()
	for _, j := range jobs {
		published, err := j.Wait(context.Background())
		require.NoError(t, err)
		require.NoError(t, published)
	}
	<-b.stopped
	msgs := b.messages(t)
	require.Len(t, msgs, 1, "the pending batch is published before Run returns")
	require.Len(t, msgs[0], 2)

	// Too late for a batch: published in a message of its own.
	require.NoError(t, b.batcher.Report(context.Background(), result(9)))
	msgs = b.messages(t)
	require.Len(t, msgs, 2)
	require.Len(t, msgs[1], 1)
	require.Equal(t, result(9).GetHookId(), msgs[1][0].GetHookId())
}

func TestBatchBoundsItsSize(t *testing.T) {
	t.Parallel()
	b := setup(t, BatchConfig{MaxBatch: MaxBatchSize, Linger: 20 * time.Millisecond})
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = 'x'
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			r := result(i)
			r.ResponseExcerpt = string(big)
			require.NoError(t, b.batcher.Report(context.Background(), r))
		})
	}
	wg.Wait()
	total := 0
	for _, rs := range b.messages(t) {
		require.LessOrEqual(t, len(rs), 3, "about maxBatchBytes per message")
		total += len(rs)
	}
	require.Equal(t, 4, total)
}

// TestJobSizeCountsTheHeaders: a result's weight in a batch is at least
// its encoded size when headers make up most of it.
func TestJobSizeCountsTheHeaders(t *testing.T) {
	t.Parallel()
	r := result(1)
	h := &eventv1.Headers{}
	for i := range 50 {
		h.Fields = append(h.Fields, &eventv1.HeaderField{Name: fmt.Sprintf("X-Header-%02d", i), Values: []string{"a", "value of some length"}})
	}
	r.RequestHeaders, r.ResponseHeaders = h, h
	require.GreaterOrEqual(t, jobSize(&job{Item: r}), proto.Size(r))
}

func TestNewBatcherRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []BatchConfig{{MaxBatch: 0}, {MaxBatch: MaxBatchSize + 1}, {MaxBatch: 2, Linger: -1}, {MaxBatch: 2, Linger: 2 * MaxLinger}} {
		_, err := NewBatcher(cfg, bus.Retrying{})
		require.Error(t, err, "%+v", cfg)
	}
}

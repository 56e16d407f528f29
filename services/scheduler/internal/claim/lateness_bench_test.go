package claim_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// latenessMode is one way of finding due hooks.
type latenessMode struct {
	name   string
	poll   time.Duration
	window bool // just-in-time claiming with the default window
}

var latenessModes = []latenessMode{
	{name: "just-in-time", poll: time.Second, window: true}, // the defaults
	{name: "poll-100ms", poll: 100 * time.Millisecond},      // the scheduler before the window
}

// latenessLoad is a set of hooks: hook i is due at start + at(i).
type latenessLoad struct {
	name  string
	hooks int
	start time.Duration
	at    func(i int) time.Duration
}

var latenessLoads = []latenessLoad{
	// 1,000 hooks spread over one second.
	{name: "1000-in-1s", hooks: 1000, start: 3 * time.Second,
		at: func(i int) time.Duration { return time.Duration(i) * time.Millisecond }},
	// 500 hooks/s for 10 s; the first ones are within the notify range
	// when created, the last ones are found by the prefetch read.
	{name: "500-per-s-10s", hooks: 5000, start: 5 * time.Second,
		at: func(i int) time.Duration { return time.Duration(i) * 2 * time.Millisecond }},
}

// BenchmarkLateness measures, for each load and mode, the time from a
// hook's post_at to its DueHook arriving at a NATS subscriber on this
// machine (local clock; PostgreSQL runs on the same machine, so its clock
// is the same). Reported as p50/p99/max in ms, and min (negative would be
// early by the local clock).
func BenchmarkLateness(b *testing.B) {
	for _, load := range latenessLoads {
		for _, mode := range latenessModes {
			b.Run(load.name+"/"+mode.name, func(b *testing.B) {
				lateness := runLateness(b, load, mode)
				slices.Sort(lateness)
				b.ReportMetric(ms(percentile(lateness, 0.50)), "p50_ms")
				b.ReportMetric(ms(percentile(lateness, 0.99)), "p99_ms")
				b.ReportMetric(ms(lateness[len(lateness)-1]), "max_ms")
				b.ReportMetric(ms(lateness[0]), "min_ms")
			})
		}
	}
}

func runLateness(b *testing.B, load latenessLoad, mode latenessMode) []time.Duration {
	pool, _ := pgtest.NewPool(b)
	srv := natstest.Start(b, natstest.Options{})
	nc, js := srv.Connect(b)
	require.NoError(b, event.EnsureStreams(context.Background(), js, event.DefaultReplicas))
	q := storetest.New(pool)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	project := fixture.Project(b, q, "receiver.example.com", defaults)

	var mu sync.Mutex
	lateness := make([]time.Duration, 0, load.hooks)
	all := make(chan struct{})
	sub, err := nc.Subscribe(event.SubjectDue, func(m *nats.Msg) {
		got := time.Now()
		var batch eventv1.DueHooks
		if proto.Unmarshal(m.Data, &batch) != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, d := range batch.GetHooks() {
			lateness = append(lateness, got.Sub(d.GetPostAt().AsTime()))
			if len(lateness) == load.hooks {
				close(all)
			}
		}
	})
	require.NoError(b, err)
	b.Cleanup(func() { _ = sub.Unsubscribe() })

	c, err := claim.New(pool, js, claim.Config{BatchSize: 500, Lease: 30 * time.Second, PollInterval: mode.poll, MaxRedrives: 5}, log)
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	wg.Go(func() { c.Run(ctx) })
	if mode.window {
		w, err := claim.NewWindow(c, pool, claim.WindowConfig{Ahead: 5 * time.Second, Refresh: time.Second}, log)
		require.NoError(b, err)
		wg.Go(func() { w.Run(ctx) })
		<-w.Listening()
	}

	// Due times are fixed before inserting, so insert speed does not
	// change the load's shape; several inserters keep ahead of the due
	// times, and a hook inserted after its due time is counted (its
	// lateness says nothing about the scheduler).
	t0 := fixture.DBNow(b, q).Add(load.start)
	var lateInserts atomic.Int64
	const workers = 4
	errs := make([]error, workers)
	var inserters sync.WaitGroup
	for w := range workers {
		inserters.Go(func() {
			for i := w; i < load.hooks && errs[w] == nil; i += workers {
				dueIn := time.Until(t0.Add(load.at(i)))
				if dueIn <= 0 {
					lateInserts.Add(1)
				}
				_, errs[w] = q.InsertHookForTest(context.Background(), storetest.InsertHookForTestParams{
					ID: uuid.Must(uuid.NewV7()), ProjectID: project, Path: "/hook", Domain: "receiver.example.com",
					Data: json.RawMessage(`{"n":1}`), DueInSeconds: dueIn.Seconds(),
				})
			}
		})
	}
	inserters.Wait()
	require.NoError(b, errors.Join(errs...))
	b.ReportMetric(float64(lateInserts.Load()), "late_inserts")
	select {
	case <-all:
	case <-time.After(load.start + load.at(load.hooks-1) + time.Minute):
		b.Fatalf("not every hook was published")
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(lateness)
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

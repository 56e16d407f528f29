package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// warmupTimeout bounds the wait for the warm-up job: river's leader
// election and its first scheduler sweeps take a few seconds.
const warmupTimeout = 60 * time.Second

// warmupArgs is a job that does nothing. riverbase schedules one at start
// and says it is ready only once it ran: a scheduled job runs only after
// the elected leader's scheduler (a 5 s sweep) made it available, so from
// then on any job scheduled at least 5 s ahead is available on time. Ready
// any earlier, the first jobs of a run would wait for river's start-up,
// which a long-running deployment never shows.
type warmupArgs struct{}

func (warmupArgs) Kind() string { return "riverbase_warmup" }

type warmupWorker struct {
	river.WorkerDefaults[warmupArgs]
	once sync.Once
	ran  chan struct{}
}

func newWarmupWorker() *warmupWorker { return &warmupWorker{ran: make(chan struct{})} }

func (w *warmupWorker) Work(context.Context, *river.Job[warmupArgs]) error {
	w.once.Do(func() { close(w.ran) })
	return nil
}

// warmUp schedules the warm-up job a second ahead and waits for it to run.
func warmUp(ctx context.Context, client *river.Client[pgx.Tx], w *warmupWorker) error {
	if _, err := client.Insert(ctx, warmupArgs{}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Second)}); err != nil {
		return fmt.Errorf("insert warm-up job: %w", err)
	}
	timer := time.NewTimer(warmupTimeout)
	defer timer.Stop()
	select {
	case <-w.ran:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("warm-up job did not run within %s", warmupTimeout)
	}
}

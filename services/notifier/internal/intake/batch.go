package intake

import (
	"context"
	"errors"

	"github.com/sundial-run/sundial/pkg/batch"
)

// MaxBatch bounds the alerts a Batcher takes in with one transaction.
const MaxBatch = 100

// Batcher takes in the alerts handed to it by concurrent callers together:
// the alerts waiting when a transaction ends go in the next one (group
// commit), so that a burst of failures costs a transaction per batch, not
// per alert, and a project's failure group is locked once per batch
// instead of by each alert in turn. Run must be running for TakeIn to
// join a batch.
type Batcher struct {
	in    *Intake
	queue *batch.Queue[taking, answer]
}

// taking is an alert handed to a Batcher, with the way it came.
type taking struct {
	alert Alert
	via   string
}

// answer is what became of one alert of a batch.
type answer struct {
	res Result
	err error
}

// NewBatcher returns a Batcher taking alerts in with in.
func NewBatcher(in *Intake) *Batcher {
	return &Batcher{in: in, queue: batch.NewQueue[taking, answer]()}
}

// TakeIn takes a in with the alerts handed over beside it, as
// Intake.TakeIn does alone; once Run has returned, alone.
func (b *Batcher) TakeIn(ctx context.Context, a Alert, via string) (Result, error) {
	out, err := b.queue.Do(ctx, taking{alert: a, via: via})
	if errors.Is(err, batch.ErrStopped) {
		return b.in.TakeIn(ctx, a, via)
	}
	if err != nil {
		return Result{}, err
	}
	return out.res, out.err
}

// Run gathers batches until ctx is done, then takes in what it has
// gathered and returns. One batch is taken in at a time: the next fills
// meanwhile, and two batches never wait for each other's failure group.
// A batch in flight is not cut short by ctx (each statement has the
// pool's bounds). Call Run once.
func (b *Batcher) Run(ctx context.Context) {
	g := batch.Gatherer[*batch.Job[taking, answer]]{Max: MaxBatch}
	txCtx := context.WithoutCancel(ctx)
	b.queue.Run(ctx, g, 1, func(jobs []*batch.Job[taking, answer]) { b.takeIn(txCtx, jobs) })
}

// takeIn takes a batch in, grouped by how its alerts came (the event, the
// sweeper), and answers each job.
func (b *Batcher) takeIn(ctx context.Context, jobs []*batch.Job[taking, answer]) {
	byVia := map[string][]int{}
	for i, j := range jobs {
		byVia[j.Item.via] = append(byVia[j.Item.via], i)
	}
	for via, idx := range byVia {
		alerts := make([]Alert, len(idx))
		for k, i := range idx {
			alerts[k] = jobs[i].Item.alert
		}
		res, errs := b.in.TakeInAll(ctx, alerts, via)
		for k, i := range idx {
			jobs[i].Answer(answer{res: res[k], err: errs[k]})
		}
	}
}

package result

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"

	"github.com/sundial-run/sundial/pkg/batch"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/internal/batchratio"
	"github.com/sundial-run/sundial/services/scheduler/internal/outbox"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Batching: a transaction per result spends most of its time waiting for
// round trips and for its own WAL flush, so under load results queue up,
// leases expire and hooks are delivered twice. A Batcher lets many handlers
// (bus.Consume runs Handle concurrently) share one transaction: each hands
// its parsed result to Run's loop, which gathers up to MaxBatch of them (or
// what arrives within Linger of the first), applies them with one statement
// per kind of change, and answers each handler with its own outcome, so
// every message is still settled by its own handler.

// BatchConfig tunes a Batcher.
type BatchConfig struct {
	// MaxBatch bounds the results one transaction applies, 1 to
	// MaxBatchSize.
	MaxBatch int
	// Linger is how long a batch waits, after its first result, for more;
	// 0 takes only the results already waiting. At most MaxLinger.
	Linger time.Duration
	// InFlight bounds the batches being applied at once (each holds a
	// database connection). While all are busy, results wait and the next
	// batch grows.
	InFlight int
	// Ratio, when set, is told how many results each message carried
	// (the claimer's bound on work in flight reads it).
	Ratio *batchratio.Ratio
	// MaxBytes bounds the result messages decoded and waiting for their
	// batches at once, by their encoded size (0: no bound). A message
	// waits for room before it is decoded: while PostgreSQL applies
	// results slower than they come, the others wait encoded (taken by
	// the consumer, or still in the results queue), and the decoded results (several times their encoded size,
	// mostly the attempts' headers) do not grow the heap past the
	// scheduler's soft memory limit. A message larger than the bound takes
	// all of it.
	MaxBytes int
}

// Bounds of BatchConfig.
const (
	MaxBatchSize = 10000
	MaxLinger    = time.Second
)

// Batcher applies attempt results in batches. Its Handle is the bus.Handler
// of the scheduler's result consumer; Run must be running for Handle to
// make progress.
type Batcher struct {
	a     *Applier
	cfg   BatchConfig
	queue *batch.Queue[pending, reply]
	room  *semaphore.Weighted // nil: no bound (MaxBytes 0)
}

// pending is a result on its way into a batch.
type pending struct {
	in   attempt
	link trace.Link // the result's span, linked from the batch's
}

// job is a result waiting in a batch for its outcome.
type job = batch.Job[pending, reply]

type reply struct {
	out *applied // nil: stale
	err error
}

// NewBatcher returns a Batcher applying results with a.
func (a *Applier) NewBatcher(cfg BatchConfig) (*Batcher, error) {
	if cfg.MaxBatch < 1 || cfg.MaxBatch > MaxBatchSize || cfg.Linger < 0 || cfg.Linger > MaxLinger || cfg.InFlight < 1 || cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("result batcher: want a batch of 1 to %d, a linger of 0 to %s, at least one batch in flight and bytes not negative, got %d, %s, %d, %d",
			MaxBatchSize, MaxLinger, cfg.MaxBatch, cfg.Linger, cfg.InFlight, cfg.MaxBytes)
	}
	b := &Batcher{a: a, cfg: cfg, queue: batch.NewQueue[pending, reply]()}
	if cfg.MaxBytes > 0 {
		b.room = semaphore.NewWeighted(int64(cfg.MaxBytes))
	}
	return b, nil
}

// Handle is the bus.Handler of the scheduler's result consumer: it decodes
// the message, an AttemptResults batch (event.DecodeResults), waits for the
// batches that apply its results, and answers nil (applied or stale),
// bus.Drop (can never be applied) or another error (the bus redelivers). A
// message that does not decode, its Sundial-Type missing or another, or its
// body malformed, is dropped: redelivering it would not make it readable,
// and the leases of its hooks re-drive them.
func (b *Batcher) Handle(ctx context.Context, d bus.Delivery) error {
	if b.room != nil {
		n := int64(min(len(d.Data), b.cfg.MaxBytes))
		if err := b.room.Acquire(ctx, n); err != nil {
			return fmt.Errorf("wait for room to decode results: %w", err)
		}
		defer b.room.Release(n)
	}
	results, err := event.DecodeResults(d.Header.Get(event.TypeHeader), d.Data)
	if err != nil {
		return bus.Drop(err)
	}
	b.cfg.Ratio.Count(1, len(results))
	return b.handleResults(ctx, results)
}

// handleResults applies every result of a message as if each had come
// alone: each gets its own span, a child of its delivery's trace (carried
// in the result, as the message's headers cannot carry one per result;
// else the message's, which bus.Consume put in ctx), and joins the batches
// of Run like any other. The message is acknowledged only once every result has been applied (or
// found stale, or dropped as one that can never apply); if any failed, the
// whole message comes back, and the results already applied are then
// stale, so a message redelivered changes each hook once. A message none of
// whose results can ever apply is dropped.
func (b *Batcher) handleResults(ctx context.Context, results []*eventv1.AttemptResult) error {
	start := time.Now()
	n := len(results)
	type waiting struct {
		ctx  context.Context
		span trace.Span
		j    *job // nil: not handed over
	}
	ws := make([]waiting, 0, n)
	// stop ends the spans of the results from ws[from] on, when the
	// message stops short (shutdown), and says why.
	stop := func(from int, err error) error {
		err = fmt.Errorf("apply batch of %d results: %w", n, err)
		for _, w := range ws[from:] {
			endApply(w.span, err)
		}
		return err
	}
	var dropped []error
	for _, r := range results {
		rctx, span := b.a.startApply(telemetry.ExtractMap(ctx, r.GetTraceContext()), r)
		in, err := parse(r)
		if err != nil {
			// One malformed result does not hold back the others.
			endApply(span, err)
			b.a.log.WarnContext(rctx, "attempt result dropped", "err", err)
			dropped = append(dropped, err)
			continue
		}
		j, err := b.queue.Submit(ctx, pending{in: in, link: trace.LinkFromContext(rctx)})
		ws = append(ws, waiting{ctx: rctx, span: span, j: j})
		if err != nil {
			return stop(0, err)
		}
	}
	var firstErr error
	for i, w := range ws {
		rep, err := w.j.Wait(ctx)
		if err != nil {
			// The batches may still commit: the redelivered message is
			// then stale, which changes nothing.
			return stop(i, err)
		}
		err = b.a.finish(w.ctx, w.j.Item.in, rep.out, rep.err, time.Since(start), slog.LevelDebug)
		endApply(w.span, err)
		switch {
		case err == nil:
		case bus.IsDrop(err):
			// Can never apply (the database refuses its data): given up
			// alone, as a message of its own would be.
			b.a.log.WarnContext(w.ctx, "attempt result dropped", "err", err)
			dropped = append(dropped, err)
		case firstErr == nil:
			firstErr = err
		}
	}
	if firstErr == nil && n > 0 && len(dropped) == n {
		return bus.Drop(errors.Join(dropped...))
	}
	return firstErr
}

// Run gathers and applies batches until ctx is done, then applies what it
// has gathered, waits for the batches in flight and returns; Handle then
// answers batch.ErrStopped. Cancelling ctx also cancels the batches in flight
// (their handlers get the error), so cancel it only once the consumer has
// drained: in-flight work finishes first. Call it once.
func (b *Batcher) Run(ctx context.Context) {
	g := batch.Gatherer[*job]{Max: b.cfg.MaxBatch, Linger: b.cfg.Linger}
	b.queue.Run(ctx, g, b.cfg.InFlight, func(jobs []*job) { b.applyBatch(ctx, jobs) })
}

// applyBatch applies a batch in one transaction and answers every handler.
// A batch the database refuses for its data (class 22 or 23: one bad
// result) is applied again result by result, each a batch of one, so that
// only the bad one is dropped; any other failure (a lost connection) is every handler's error,
// and the bus redelivers them.
func (b *Batcher) applyBatch(ctx context.Context, jobs []*job) {
	start := time.Now()
	ctx, span := b.startBatch(ctx, jobs)
	ins := make([]attempt, len(jobs))
	for i, j := range jobs {
		ins[i] = j.Item.in
	}
	replies := make([]reply, len(jobs))
	outs, err := b.a.applyBatchTx(ctx, ins)
	fallback := err != nil && postgres.RetryAlone(err)
	switch {
	case fallback:
		for i, in := range ins {
			var one []*applied
			if one, replies[i].err = b.a.applyBatchTx(ctx, []attempt{in}); replies[i].err == nil {
				replies[i].out = one[0]
			}
		}
	case err != nil:
		span.SetStatus(codes.Error, "batch not applied")
		for i := range replies {
			replies[i].err = fmt.Errorf("batch of %d results: %w", len(jobs), err)
		}
	default:
		for i, out := range outs {
			replies[i].out = out
		}
	}
	// The batch's work is done before any handler hears of it.
	span.End()
	for i, j := range jobs {
		j.Answer(replies[i])
	}
	b.logBatch(ctx, replies, fallback, err, time.Since(start))
}

func (b *Batcher) startBatch(ctx context.Context, jobs []*job) (context.Context, trace.Span) {
	if b.a.unsampledRecordsNothing {
		// A new root is never sampled then: it would record nothing.
		return ctx, noSpan
	}
	links := make([]trace.Link, 0, len(jobs))
	for _, j := range jobs {
		if j.Item.link.SpanContext.IsValid() {
			links = append(links, j.Item.link)
		}
	}
	// A batch serves many traces: it starts its own and links each
	// result's scheduler.apply_result span.
	return b.a.tracer.Start(ctx, "scheduler.apply_results", trace.WithNewRoot(), trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("batch.size", len(jobs))))
}

// noSpan is the span of a batch whose span would record nothing.
var noSpan = trace.SpanFromContext(context.Background())

// logBatch writes the batch's one line: count is the results applied,
// deferrals aside (tests/bench reads it), the other counts split the batch
// by what it did.
// A batch the database refused and that was applied result by result says
// so at warn; one that failed as a whole is logged at warn with its error
// (the handlers log each dropped result).
func (b *Batcher) logBatch(ctx context.Context, replies []reply, fallback bool, err error, took time.Duration) {
	n := len(replies)
	if err != nil && !fallback {
		b.a.log.WarnContext(ctx, "batch of attempt results not applied", "results", n, "duration", took, "err", err)
		return
	}
	counts := map[string]int{}
	for _, rep := range replies {
		switch {
		case rep.err != nil:
			counts["not_applied"]++
		case rep.out == nil:
			counts["stale"]++
		case rep.out.deferred:
			counts["deferred"]++
		default:
			counts[rep.out.status]++
		}
	}
	attrs := []any{"count", n - counts["stale"] - counts["not_applied"] - counts["deferred"], "results", n,
		"completed", counts[StatusCompleted], "retry", counts[StatusRetry], "failed", counts[StatusFailed],
		"async", counts[StatusPending], "deferred", counts["deferred"], "stale", counts["stale"], "duration", took}
	if fallback {
		b.a.log.WarnContext(ctx, "applied attempt results", append(attrs, "not_applied", counts["not_applied"],
			"fallback", "batch refused by the database (or deadlocked); applied result by result", "batch_err", err)...)
		return
	}
	b.a.log.InfoContext(ctx, "applied attempt results", attrs...)
}

// leaseKey names a result's delivery: at most one result per key applies.
type leaseKey struct {
	hookID   uuid.UUID
	leaseSeq int64
}

// applyBatchTx applies ins in one transaction. outs[i] is what ins[i] did
// to its hook, nil when it was stale (a later duplicate of a result in the
// same batch is stale too).
func (a *Applier) applyBatchTx(ctx context.Context, ins []attempt) ([]*applied, error) {
	tx, err := a.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := store.New(tx)
	var figures tally
	outs, err := a.applyBatch(ctx, q, ins, &figures)
	if err != nil {
		return nil, err
	}
	// Last: the rows it adds to are shared by every batch of a project's
	// minute, and are locked from here to the commit.
	if err := figures.write(ctx, q); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return outs, nil
}

// batchPlan is a batch sorted by what it does to the hooks: indexes into
// the batch of the results that hold their hook's lease, by kind.
type batchPlan struct {
	hooks     map[int]lockedHook
	successes []int
	failures  []int
	waits     []int
	// defers are the results that sent nothing (deferral.go).
	defers []int
}

// completes reports whether the result is a success that completes its
// hook: not a deferral, not a 202.
func completes(in attempt) bool { return in.success && !in.deferred && !in.async }

// add sorts the result at i, whose hook is locked, by kind.
func (p *batchPlan) add(i int, in attempt) {
	switch {
	case in.deferred:
		p.defers = append(p.defers, i)
	case in.async:
		p.waits = append(p.waits, i)
	case completes(in):
		p.successes = append(p.successes, i)
	default:
		p.failures = append(p.failures, i)
	}
}

// applyBatch applies ins in the caller's transaction and tallies the
// attempts it applies in figures (figures.go). The successes' hooks are
// completed first, which tells the live ones from the stale; every
// attempt is recorded after its hook is locked (migration 00026).
func (a *Applier) applyBatch(ctx context.Context, q *store.Queries, ins []attempt, figures *tally) ([]*applied, error) {
	plan, err := a.lockBatch(ctx, q, ins)
	if err != nil {
		return nil, err
	}
	outs := make([]*applied, len(ins))
	if err := a.completeAll(ctx, q, ins, &plan, outs, false); err != nil {
		return nil, err
	}
	figures.addPlanned(ins, plan)
	if err := insertAttempts(ctx, q, ins, append(plan.successes, plan.failures...)); err != nil {
		return nil, err
	}
	if err := a.settle(ctx, q, ins, plan, outs); err != nil {
		return nil, err
	}
	if err := a.startWaits(ctx, q, ins, plan, outs, figures); err != nil {
		return nil, err
	}
	if err := a.deferAll(ctx, q, ins, plan, outs); err != nil {
		return nil, err
	}
	if err := a.recordBreakers(ctx, q, ins, plan, outs); err != nil {
		return nil, err
	}
	return outs, nil
}

// settle moves on what the completions (completeAll, run first) left: the
// hooks of the planned failures, their attempts recorded, go to retry
// while the budget allows another attempt and to failed once it does not;
// it writes the alerts the successes and failures cause, and moves on the
// sequence runs whose step hooks finished (sequence.go). Delivery results
// and ended async waits (async.go) all come through here.
func (a *Applier) settle(ctx context.Context, q *store.Queries, ins []attempt, plan batchPlan, outs []*applied) error {
	if err := a.settleFailures(ctx, q, ins, plan, outs); err != nil {
		return err
	}
	var alerts []*eventv1.Alert
	for _, i := range append(plan.successes, plan.failures...) {
		alerts = append(alerts, outs[i].alerts...)
	}
	if err := outbox.Insert(ctx, q, alerts); err != nil {
		return err
	}
	return a.advanceSequences(ctx, q, ins, plan, outs)
}

// startWaits applies the planned 202 answers (rare: one at a time). A 202
// whose attempt the receiver has already answered (the ack or nack came
// first) is settled at once by that answer, in this transaction, and
// tallied in figures.
func (a *Applier) startWaits(ctx context.Context, q *store.Queries, ins []attempt, plan batchPlan, outs []*applied, figures *tally) error {
	answered := map[uuid.UUID]int{}
	for _, i := range plan.waits {
		out, early, err := a.startWait(ctx, q, ins[i], plan.hooks[i])
		if err != nil {
			return err
		}
		outs[i] = out
		if early {
			answered[ins[i].hookID] = i
		}
	}
	if len(answered) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, 0, len(answered))
	for id := range answered {
		ids = append(ids, id)
	}
	ended, endOuts, err := a.endWaits(ctx, q, ids)
	if err != nil {
		return err
	}
	for j, in := range ended {
		i := answered[in.hookID]
		outs[i] = endOuts[j]
		// The attempt the gateway recorded with the answer has its own
		// start (the answer's); the figures count the answer in the
		// minute of the 202's.
		ended[j].startedAt = ins[i].startedAt
	}
	figures.addEnded(ended, endOuts)
	return nil
}

// lockBatch sorts the results by kind, the first of each lease only, and
// locks, in one statement, the hooks of those that are not successes and
// still hold their lease: the plan keeps only those. The successes stay
// unlocked until completeAll completes their hooks, checking the lease as
// it does.
func (a *Applier) lockBatch(ctx context.Context, q *store.Queries, ins []attempt) (batchPlan, error) {
	first := make(map[leaseKey]int, len(ins))
	plan := batchPlan{hooks: make(map[int]lockedHook, len(ins))}
	arg := store.LockLeasedHooksParams{}
	for i, in := range ins {
		k := leaseKey{in.hookID, in.leaseSeq}
		if _, dup := first[k]; dup {
			continue
		}
		first[k] = i
		if completes(in) {
			plan.successes = append(plan.successes, i)
			continue
		}
		arg.HookIds = append(arg.HookIds, in.hookID)
		arg.LeaseSeqs = append(arg.LeaseSeqs, in.leaseSeq)
	}
	if len(arg.HookIds) == 0 {
		return plan, nil
	}
	rows, err := q.LockLeasedHooks(ctx, arg)
	if err != nil {
		return batchPlan{}, fmt.Errorf("lock hooks: %w", err)
	}
	for _, row := range rows {
		i := first[leaseKey{row.ID, row.LeaseSeq}]
		plan.hooks[i] = lockedHook{
			projectID: row.ProjectID, domain: row.Domain, path: row.Path, budgetBase: row.RetryBudgetBase, override: row.RetryOverride,
			policy: projectPolicy(row.RetryMinRetries, row.RetryDelaySecs, row.RetryStrategy,
				row.RetryBackoffFactor, row.RetryMaxDelaySecs, row.RetryJitter),
			failures:    a.failurePolicy(ctx, row.ProjectID, row.FailurePolicy),
			sequenceRun: row.SequenceRunID, postAt: row.PostAt,
		}
		plan.add(i, ins[i])
	}
	return plan, nil
}

// insertAttempts records the attempts of the results at idx in one
// statement.
func insertAttempts(ctx context.Context, q *store.Queries, ins []attempt, idx []int) error {
	if len(idx) == 0 {
		return nil
	}
	arg := store.InsertAttemptsParams{}
	for _, i := range idx {
		in := ins[i]
		arg.HookIds = append(arg.HookIds, in.hookID)
		arg.Attempts = append(arg.Attempts, in.attempt)
		arg.LeaseSeqs = append(arg.LeaseSeqs, in.leaseSeq)
		arg.StartedAts = append(arg.StartedAts, in.startedAt)
		arg.Durations = append(arg.Durations, in.duration)
		arg.Outcomes = append(arg.Outcomes, in.recorded)
		arg.StatusCodes = append(arg.StatusCodes, in.statusCode)
		arg.Errors = append(arg.Errors, in.errText)
		arg.FailureClasses = append(arg.FailureClasses, failclass.Word(in.class))
		arg.Excerpts = append(arg.Excerpts, in.excerpt)
		arg.RequestHeaders = append(arg.RequestHeaders, in.request.text())
		arg.ResponseHeaders = append(arg.ResponseHeaders, in.response.text())
		arg.RequestHeadersOmitted = append(arg.RequestHeadersOmitted, in.request.omitted)
		arg.ResponseHeadersOmitted = append(arg.ResponseHeadersOmitted, in.response.omitted)
	}
	if _, err := q.InsertAttempts(ctx, arg); err != nil {
		return fmt.Errorf("insert attempts: %w", err)
	}
	return nil
}

// completeAll completes, in one statement, the hooks that still hold the
// lease of a planned success, locking them as it does, and keeps in the
// plan only those successes, with their hooks; the others are stale (outs
// stays nil). waitsEnded: the successes are acks of async waits whose
// hooks the caller has locked (CompleteHooks). The hooks are written in id
// order, the order LockLeasedHooks locks in.
func (a *Applier) completeAll(ctx context.Context, q *store.Queries, ins []attempt, plan *batchPlan, outs []*applied, waitsEnded bool) error {
	if len(plan.successes) == 0 {
		return nil
	}
	byID := slices.Clone(plan.successes)
	slices.SortFunc(byID, func(x, y int) int { return bytes.Compare(ins[x].hookID[:], ins[y].hookID[:]) })
	arg := store.CompleteHooksParams{WaitsEnded: waitsEnded}
	success := make(map[leaseKey]int, len(byID))
	for _, i := range byID {
		in := ins[i]
		success[leaseKey{in.hookID, in.leaseSeq}] = i
		arg.Ids = append(arg.Ids, in.hookID)
		arg.LeaseSeqs = append(arg.LeaseSeqs, in.leaseSeq)
		arg.Attempts = append(arg.Attempts, in.attempt)
		arg.Durations = append(arg.Durations, in.duration)
		arg.StartedAts = append(arg.StartedAts, in.startedAt)
	}
	rows, err := q.CompleteHooks(ctx, arg)
	if err != nil {
		return fmt.Errorf("set hooks completed: %w", err)
	}
	at := make(map[leaseKey]time.Time, len(rows))
	for _, row := range rows {
		k := leaseKey{row.ID, row.LeaseSeq}
		at[k] = row.UpdatedAt
		i := success[k]
		plan.hooks[i] = lockedHook{
			projectID: row.ProjectID, domain: row.Domain, path: row.Path, budgetBase: row.RetryBudgetBase, override: row.RetryOverride,
			policy: projectPolicy(row.RetryMinRetries, row.RetryDelaySecs, row.RetryStrategy,
				row.RetryBackoffFactor, row.RetryMaxDelaySecs, row.RetryJitter),
			sequenceRun: row.SequenceRunID, postAt: row.PostAt,
		}
	}
	live := plan.successes[:0]
	for _, i := range plan.successes {
		when, ok := at[leaseKey{ins[i].hookID, ins[i].leaseSeq}]
		if !ok {
			continue
		}
		live = append(live, i)
		h := plan.hooks[i]
		outs[i] = &applied{projectID: h.projectID, path: h.path, status: StatusCompleted,
			maxAttempts: a.budget(ctx, ins[i].hookID, h).MaxAttempts(), at: when}
	}
	plan.successes = live
	return recoverAll(ctx, q, ins, *plan, outs)
}

// endpoint is where hooks are delivered: a project's domain and path.
type endpoint struct {
	projectID uuid.UUID
	domain    string
	path      string
}

// recoverAll ends, in one statement, the failing spells of the endpoints
// the successes of the batch were delivered to. Each recovered endpoint's
// alert names the first success to it and goes out with that result. With
// nothing failing this is one cheap statement that returns no rows. (A
// batch recovering endpoints while another marks the same ones failing can
// deadlock with it; PostgreSQL aborts one, and its results are redelivered.)
func recoverAll(ctx context.Context, q *store.Queries, ins []attempt, plan batchPlan, outs []*applied) error {
	first := make(map[endpoint]int, len(plan.successes))
	arg := store.RecoverEndpointsParams{}
	for _, i := range plan.successes {
		h := plan.hooks[i]
		e := endpoint{h.projectID, h.domain, h.path}
		if _, dup := first[e]; dup {
			continue
		}
		first[e] = i
		arg.ProjectIds = append(arg.ProjectIds, e.projectID)
		arg.Domains = append(arg.Domains, e.domain)
		arg.Paths = append(arg.Paths, e.path)
	}
	rows, err := q.RecoverEndpoints(ctx, arg)
	if err != nil {
		return fmt.Errorf("recover endpoints: %w", err)
	}
	for _, row := range rows {
		i, ok := first[endpoint{row.ProjectID, row.Domain, row.Path}]
		if !ok {
			return fmt.Errorf("recovered endpoint %s %s%s that no success of the batch was delivered to",
				row.ProjectID, row.Domain, row.Path)
		}
		outs[i].alerts = append(outs[i].alerts, recovery{
			projectID: row.ProjectID, domain: row.Domain, path: row.Path, hookID: ins[i].hookID,
			failingSince: row.FailingSince, failedHooks: row.FailedHooks, at: outs[i].at,
		}.alert())
	}
	return nil
}

// settleFailures retries or fails the hooks of every failure in one
// statement: retry while the budget allows another attempt and the
// project's failure policy retries the failure's class, failed once either
// does not (a pause also pauses the endpoint: recordBreakers).
func (a *Applier) settleFailures(ctx context.Context, q *store.Queries, ins []attempt, plan batchPlan, outs []*applied) error {
	if len(plan.failures) == 0 {
		return nil
	}
	arg := store.SettleFailedHooksParams{}
	for _, i := range plan.failures {
		in, h := ins[i], plan.hooks[i]
		budget := a.budget(ctx, in.hookID, h)
		out := &applied{projectID: h.projectID, path: h.path, status: StatusRetry, maxAttempts: budget.MaxAttempts()}
		var delay float64
		action := h.failures.Of(in.class)
		out.pause = action == failclass.Pause
		if int(in.attempt) < out.maxAttempts && action == failclass.Retry {
			// A receiver's Retry-After is a floor under the policy's delay.
			delay = max(budget.DelayAfter(int(in.attempt), a.rnd).Seconds(), in.retryAfter.Seconds())
		} else {
			out.status = StatusFailed
		}
		outs[i] = out
		arg.Ids = append(arg.Ids, in.hookID)
		arg.Attempts = append(arg.Attempts, in.attempt)
		arg.Durations = append(arg.Durations, in.duration)
		arg.FailureErrors = append(arg.FailureErrors, in.errText)
		arg.FailureClasses = append(arg.FailureClasses, failclass.Word(in.class))
		arg.StartedAts = append(arg.StartedAts, in.startedAt)
		arg.Delays = append(arg.Delays, delay)
		arg.Finals = append(arg.Finals, out.status == StatusFailed)
	}
	rows, err := q.SettleFailedHooks(ctx, arg)
	if err != nil {
		return fmt.Errorf("set failed hooks: %w", err)
	}
	at := make(map[uuid.UUID]time.Time, len(rows))
	for _, row := range rows {
		at[row.ID] = row.At
	}
	for _, i := range plan.failures {
		when, ok := at[ins[i].hookID]
		if !ok {
			return fmt.Errorf("set hook %s %s: not updated under its lock", ins[i].hookID, outs[i].status)
		}
		outs[i].at = when
	}
	return failAll(ctx, q, ins, plan, outs)
}

// failAll marks, in one statement, the endpoints of the hooks that ran out
// of retries as failing, and gives each such result its hook.failed alert.
func failAll(ctx context.Context, q *store.Queries, ins []attempt, plan batchPlan, outs []*applied) error {
	arg := store.MarkEndpointsFailingParams{}
	for _, i := range plan.failures {
		if outs[i].status != StatusFailed {
			continue
		}
		in, h := ins[i], plan.hooks[i]
		arg.ProjectIds = append(arg.ProjectIds, h.projectID)
		arg.Domains = append(arg.Domains, h.domain)
		arg.Paths = append(arg.Paths, h.path)
		outs[i].alerts = append(outs[i].alerts, hookFailure{
			hookID: in.hookID, leaseSeq: in.leaseSeq, projectID: h.projectID, domain: h.domain, path: h.path,
			err: in.errText, class: in.class, attempts: in.attempt, at: outs[i].at,
		}.alert())
	}
	if len(arg.ProjectIds) == 0 {
		return nil
	}
	if err := q.MarkEndpointsFailing(ctx, arg); err != nil {
		return fmt.Errorf("mark endpoints failing: %w", err)
	}
	return nil
}

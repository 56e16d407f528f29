// Package claim finds the hooks that are due by the database clock, claims
// them under a lease and publishes them, in DueHooks messages, to the
// dispatchers.
//
// The lease is what makes delivery at-least-once: a claimed hook's run_at
// moves to the lease expiry, so if its DueHooks or AttemptResult is lost the
// hook becomes due again and the next claim re-drives it with a higher
// lease_seq. That is why a failed publish is logged and never retried here.
//
// Two types claim, and they stay two. The Claimer (claim.go) owns the
// claim: the lease, the bound on work in flight (admission.go), the claim
// statements, and publishing what they took (publish.go, due.go, hold.go);
// its Run is the safety poll of everything due. The Window (window.go)
// owns the timing: the near-due hooks held in memory (queue.go, fed by
// prefetch reads and by notifications, listen.go) and when to claim them
// by id. The Window's state is all its own and the poll runs without it
// (just-in-time claiming off), so one type would only mix two loops'
// fields. The Window reaches the Claimer only through idClaimer, the small
// interface it declares: it may ask for room and for a claim, never touch
// the lease, the admission or the statements.
package claim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// maxErrorBackoff bounds the wait between claims while the database fails.
const maxErrorBackoff = 5 * time.Second

// electionWait is how long a claim's publish waits for a due stream that
// answers nothing, as while a JetStream cluster elects its leader (several
// seconds: docs/operations.md, "A NATS node dies"), within the claim's
// lease: a hook whose publish fails waits a whole lease to be re-driven.
const electionWait = 15 * time.Second

// The paths that claim, named in spans and log lines.
const (
	viaPoll   = "poll"
	viaWindow = "just-in-time"
)

// Claimer claims due hooks and publishes them. Several claimers, in one
// process or many, may share a database: SKIP LOCKED keeps them apart.
type Claimer struct {
	// db is what queries runs on; a just-in-time claim runs on it through
	// a rowClock (rowclock.go), a poll in a transaction of its own.
	db      DB
	queries *store.Queries
	js      jetstream.JetStream
	pub     *bus.Publisher
	cfg     Config
	log     *slog.Logger

	admit       *admission
	instruments instruments

	// streamsLost is set when a publish found no stream, so that the next
	// claim first re-creates the streams (NATS lost its store), or waits
	// until they answer (healStreams).
	streamsLost atomic.Bool
}

// DB is the database as a Claimer uses it: statements, and transactions
// for the poll (a *pgxpool.Pool).
type DB interface {
	store.DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
}

// New returns a Claimer that reads and writes hooks through db and
// publishes on js.
func New(db DB, js jetstream.JetStream, cfg Config, log *slog.Logger) (*Claimer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("claimer: %w", err)
	}
	cfg.DueBatch = max(cfg.DueBatch, 1)
	cfg.StreamReplicas = max(cfg.StreamReplicas, event.DefaultReplicas)
	in, err := newInstruments(cfg.TracerProvider, cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	return &Claimer{
		db:          db,
		queries:     store.New(db),
		js:          js,
		pub:         bus.NewPublisher(js).WaitForLeader(electionWait),
		cfg:         cfg,
		log:         log.With("component", "claimer"),
		admit:       &admission{js: js, limit: cfg.MaxInFlight, perResult: cfg.ResultsPerMessage},
		instruments: in,
	}, nil
}

// Run claims and publishes until ctx is done. It claims again at once after
// a full batch (there is probably more due work), waits PollInterval after a
// partial one, and backs off while the database fails. A claim in progress
// when ctx ends is finished, so no claimed hook waits for its lease to expire
// only because the scheduler was stopping.
func (c *Claimer) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if ctx.Err() != nil {
			return
		}
		full, err := c.cycle(ctx)
		wait := c.cfg.PollInterval
		switch {
		case errors.Is(err, errBackpressure):
			wait = backpressureWait
		case err != nil:
			failures++
			wait = errorBackoff(c.cfg.PollInterval, failures)
			c.log.Warn("claim failed", "err", err, "retry_in", wait)
		case full:
			failures, wait = 0, 0
		default:
			failures = 0
		}
		timer.Reset(wait)
	}
}

// cycle runs one claim detached from ctx's cancellation.
func (c *Claimer) cycle(ctx context.Context) (full bool, err error) {
	cycleCtx, cancel := c.detach(ctx)
	defer cancel()
	_, full, err = c.claimOnce(cycleCtx)
	return full, err
}

// detach is the context of one claim: ctx's values without its
// cancellation, so that a claim that has committed gets its hooks out,
// bounded by the lease, past which publishing them is pointless.
func (c *Claimer) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Lease)
}

func errorBackoff(base time.Duration, failures int) time.Duration {
	d := base
	for i := 1; i < failures && d < maxErrorBackoff; i++ {
		d *= 2
	}
	return min(d, maxErrorBackoff)
}

// errBackpressure is ClaimOnce's answer while the work in flight is at
// MaxInFlight: nothing was claimed, try again shortly.
var errBackpressure = errors.New("claims paused: the work in flight is at its bound")

// ClaimOnce claims up to BatchSize due hooks in one statement (fewer when
// the work in flight is near MaxInFlight), then publishes their DueHooks.
// It returns how many hooks it claimed. A publish failure is logged and
// counted, not returned: the claim has committed, and the lease expiry
// re-drives the hooks that were not published.
func (c *Claimer) ClaimOnce(ctx context.Context) (int, error) {
	n, _, err := c.claimOnce(ctx)
	return n, err
}

// claimOnce is ClaimOnce, also telling whether the claim filled the batch
// it was allowed (then there is probably more due work).
func (c *Claimer) claimOnce(ctx context.Context) (n int, full bool, err error) {
	if err := c.healStreams(ctx); err != nil {
		return 0, false, err
	}
	batch := c.reserve(ctx)
	if batch == 0 {
		return 0, false, errBackpressure
	}
	start := time.Now()
	rows, err := c.pollClaim(ctx, batch)
	if err != nil {
		c.release(batch)
		return 0, false, err
	}
	full = len(rows) == batch
	rows, _ = c.leaveOutDeferred(ctx, rows)
	c.release(batch - len(rows))
	// The poll claims only hooks already due: none is held.
	c.publish(ctx, rows, answerClock(rows, nil, time.Now()), start, viaPoll)
	return len(rows), full, nil
}

// pollClaim claims up to batch hooks already due, soonest first: one
// transaction locks them (LockDueHooks) and claims them by id, the
// statement the just-in-time claim runs too.
func (c *Claimer) pollClaim(ctx context.Context, batch int) (rows []store.ClaimHooksRow, err error) {
	tx, err := c.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("claim due hooks: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	q := store.New(tx)
	ids, err := q.LockDueHooks(ctx, int32(batch))
	if err != nil {
		return nil, fmt.Errorf("claim due hooks: %w", err)
	}
	if rows, err = c.claimByID(ctx, q, ids, 0); err != nil {
		return nil, err
	}
	if err = tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("claim due hooks: commit: %w", err)
	}
	return rows, nil
}

// reserve takes room for up to a batch of hooks under MaxInFlight
// (admission.go) and returns how many; release gives back what a claim did
// not take.
func (c *Claimer) reserve(ctx context.Context) int { return c.admit.reserve(ctx, c.cfg.BatchSize) }

func (c *Claimer) release(n int) { c.admit.release(n) }

// claimIDs claims those of ids that are due within ahead by the database
// clock, releases the room of the others, and publishes what it claimed at
// once, each hook with the hold it still needs (hold.go). ctx is a claim's
// (detach).
func (c *Claimer) claimIDs(ctx context.Context, ids []uuid.UUID, ahead time.Duration) (claimed int, err error) {
	if err := c.healStreams(ctx); err != nil {
		c.release(len(ids))
		return 0, err
	}
	start := time.Now()
	answer := &rowClock{DBTX: c.db}
	rows, err := c.claimByID(ctx, store.New(answer), ids, ahead)
	received := time.Now()
	if err != nil {
		c.release(len(ids))
		return 0, err
	}
	clock := answerClock(rows, answer.arrived, received)
	rows, _ = c.leaveOutDeferred(ctx, rows)
	c.release(len(ids) - len(rows))
	c.publish(ctx, rows, clock, start, viaWindow)
	return len(rows), nil
}

// warmClaim runs the claim by id on db with no ids: it changes nothing,
// but opens the connection, prepares the statement and fills the backend's
// caches.
func (c *Claimer) warmClaim(ctx context.Context, db store.DBTX, ahead time.Duration) error {
	_, err := c.claimByID(ctx, store.New(db), []uuid.UUID{}, ahead)
	return err
}

// claimByID claims those of ids due within ahead by the database clock,
// under a lease.
func (c *Claimer) claimByID(ctx context.Context, q *store.Queries, ids []uuid.UUID, ahead time.Duration) ([]store.ClaimHooksRow, error) {
	rows, err := q.ClaimHooks(ctx, store.ClaimHooksParams{
		LeaseSeconds: c.cfg.Lease.Seconds(),
		AheadSeconds: ahead.Seconds(),
		Ids:          ids,
	})
	if err != nil {
		return nil, fmt.Errorf("claim hooks by id: %w", err)
	}
	return rows, nil
}

// givenUp reports whether the attempt of a claimed row has been re-driven
// more than MaxRedrives times: its claim ends it (giveUp) instead of
// handing it out again.
func (c *Claimer) givenUp(r store.ClaimHooksRow) bool {
	return int(r.Redrives) > c.cfg.MaxRedrives
}

// dueHook builds the DueHook of one claimed hook.
func (c *Claimer) dueHook(r store.ClaimHooksRow) *eventv1.DueHook {
	hookID := r.ID.String()
	policy, err := retry.Effective(projectPolicy(r), r.RetryOverride)
	if err != nil {
		// The gateway validates overrides, so this is a bug or a manual
		// edit; the project's policy still lets the hook be delivered.
		c.log.Warn("unusable retry override; using the project's policy", "hook_id", hookID, "err", err)
	}
	return &eventv1.DueHook{
		HookId:         hookID,
		ProjectId:      r.ProjectID.String(),
		Attempt:        r.Attempts + 1,
		LeaseSeq:       r.LeaseSeq,
		LeaseExpiresAt: timestamppb.New(r.LeaseExpiresAt),
		Url:            "https://" + r.Domain + r.Path,
		Path:           r.Path,
		Data:           r.Data,
		PostAt:         timestamppb.New(r.PostAt),
		CreatedAt:      timestamppb.New(r.CreatedAt),
		UpdatedAt:      timestamppb.New(r.UpdatedAt),
		MaxAttempts:    int32(retry.Budget{Policy: policy, Base: int(r.RetryBudgetBase)}.MaxAttempts()),
		LeaseDuration:  durationpb.New(c.cfg.Lease),
		Listener:       r.Listener,
	}
}

// giveUp builds the failed result of an attempt whose every lease expired,
// in an AttemptResults of its own. The result goes through the results
// stream like a dispatcher's, under the claim's lease, so the one applier
// records the attempt and retries or fails the hook; no dispatcher ever
// sees this lease.
func (c *Claimer) giveUp(ctx context.Context, r store.ClaimHooksRow) bus.Message {
	hookID := r.ID.String()
	reason := fmt.Sprintf("no result after %d deliveries of this attempt: each lease of %s expired"+
		" (a dispatcher crashed or stopped, or its messages were lost)", r.Redrives, c.cfg.Lease)
	c.log.WarnContext(ctx, "attempt re-driven too often; recording it as failed",
		"hook_id", hookID, "attempt", r.Attempts+1, "redrives", r.Redrives)
	return bus.AttemptResults([]*eventv1.AttemptResult{{
		HookId:       hookID,
		ProjectId:    r.ProjectID.String(),
		Attempt:      r.Attempts + 1,
		LeaseSeq:     r.LeaseSeq,
		Outcome:      eventv1.Outcome_OUTCOME_FAILURE,
		Error:        reason,
		FailureClass: eventv1.FailureClass_FAILURE_CLASS_LOST,
		StartedAt:    timestamppb.Now(),
	}})
}

func projectPolicy(r store.ClaimHooksRow) retry.Policy {
	return retry.Columns{
		MinRetries: r.RetryMinRetries, DelaySecs: r.RetryDelaySecs, Strategy: r.RetryStrategy,
		BackoffFactor: r.RetryBackoffFactor, MaxDelaySecs: r.RetryMaxDelaySecs, Jitter: r.RetryJitter,
	}.Project()
}

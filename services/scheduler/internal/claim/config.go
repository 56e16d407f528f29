package claim

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/services/scheduler/internal/batchratio"
)

// Config tunes a Claimer.
type Config struct {
	// BatchSize bounds the hooks one claim takes.
	BatchSize int
	// Lease is how long a dispatcher has to report a claimed hook's result
	// before the hook is due again.
	Lease time.Duration
	// PollInterval is the wait after a claim that did not fill its batch.
	PollInterval time.Duration
	// MaxRedrives is how many times one attempt is handed out again after
	// its lease expired without a result. The claim after that records the
	// attempt as failed instead, so a hook whose delivery crashes every
	// dispatcher is not re-driven forever: its retry policy takes over.
	MaxRedrives int
	// DueBatch is how many hooks at most one DueHooks message carries;
	// 0 is taken as 1, a message per hook. The service uses
	// DefaultDueBatch; tests use others. See due.go.
	DueBatch int
	// MaxInFlight bounds the hooks claimed and not yet settled (messages in
	// the due and results queues) at which claiming pauses; 0 means no
	// bound. See admission.go.
	MaxInFlight int
	// ResultsPerMessage follows the results an AttemptResults message
	// carries, for MaxInFlight's count of the results queue; the result
	// batcher counts them as it decodes. nil counts a message as one.
	ResultsPerMessage *batchratio.Ratio
	// StreamReplicas are the replicas of the streams the claimer re-creates
	// when a publish found none (SUNDIAL_STREAM_REPLICAS); 0 is taken as
	// event.DefaultReplicas.
	StreamReplicas int
	// TracerProvider and MeterProvider make the claimer's spans and
	// metrics; nil means the global ones.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// MaxBatchSize bounds Config.BatchSize: one statement locks and updates the
// whole batch, and its DueHooks are published together.
const MaxBatchSize = 10000

// DefaultDueBatch is the scheduler's bound on the hooks of one DueHooks
// message (besides bus.DueBatchBytes): larger messages saved little more
// NATS work in a burst, while the dispatchers' scaling signal counts
// messages and a killed dispatcher's messages come back whole
// (docs/benchmarks.md, "Claim ahead and the hold").
const DefaultDueBatch = 64

// MaxDueBatch bounds Config.DueBatch.
const MaxDueBatch = 1000

// Validate reports a configuration the claimer cannot run with.
func (c Config) Validate() error {
	var errs []error
	if c.BatchSize < 1 || c.BatchSize > MaxBatchSize {
		errs = append(errs, fmt.Errorf("batch size %d: want 1 to %d", c.BatchSize, MaxBatchSize))
	}
	if c.Lease <= 0 {
		errs = append(errs, fmt.Errorf("lease %s: must be positive", c.Lease))
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("poll interval %s: must be positive", c.PollInterval))
	}
	if c.DueBatch < 0 || c.DueBatch > MaxDueBatch {
		errs = append(errs, fmt.Errorf("due batch %d: want 0 to %d", c.DueBatch, MaxDueBatch))
	}
	if c.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("max in flight %d: must not be negative (0: no bound)", c.MaxInFlight))
	}
	if c.MaxRedrives < 0 {
		errs = append(errs, fmt.Errorf("max re-drives %d: must not be negative", c.MaxRedrives))
	}
	return errors.Join(errs...)
}

// WindowConfig tunes a Window.
type WindowConfig struct {
	// Ahead is how far ahead of the database's now hooks are loaded into
	// memory (the prefetch window).
	Ahead time.Duration
	// Refresh is the interval between prefetch reads.
	Refresh time.Duration
	// Claims bounds the just-in-time claims in flight at once (0:
	// DefaultClaims). A hook that comes due while a claim is running is
	// claimed at once by another instead of waiting for it, so one slow
	// commit or publish delays only its own hooks.
	Claims int
	// ClaimAhead is how long before a hook is due (database clock) its
	// just-in-time claim may run; its DueHook then carries the hold the
	// dispatcher waits out before delivering it (see hold.go). Zero claims
	// at the due instant.
	ClaimAhead time.Duration
}

// DefaultClaims is the just-in-time claims in flight at once by default:
// enough to keep hooks due every few milliseconds from queueing behind a
// claim (a short transaction, but one that waits for its commit), few
// enough to leave most of a 16-connection pool to the results.
const DefaultClaims = 4

// MaxClaims bounds WindowConfig.Claims: each claim in flight holds a pool
// connection.
const MaxClaims = 64

// MaxClaimAhead bounds WindowConfig.ClaimAhead: a hook cancelled within it
// of its due instant may already be claimed and held, so it is delivered
// all the same; that window stays short.
const MaxClaimAhead = 2 * time.Second

// DefaultClaimAhead covers a claim's commit on a busy database and its
// answer, with room to spare.
const DefaultClaimAhead = 200 * time.Millisecond

// claimLead is how long before its first hook is due a just-in-time claim
// starts: three quarters of ClaimAhead. The claim takes every queued hook
// due within ClaimAhead, so each one gathers the hooks of the following
// quarter (50 ms at the default) instead of the one or two that just came
// within reach. In a steady flow, starting a claim as soon as the first
// hook was within ClaimAhead made a claim statement for every hook or two,
// and that statement's fixed cost was a large share of PostgreSQL's
// processor time per hook (docs/benchmarks.md, "Claim ahead and the hold").
// No hook is claimed earlier than ClaimAhead before it is due, and the
// first of a claim still has three quarters of it (150 ms) for the commit.
func (c WindowConfig) claimLead() time.Duration { return c.ClaimAhead * 3 / 4 }

// Validate reports a configuration the window cannot run with.
func (c WindowConfig) Validate() error {
	var errs []error
	if c.Ahead <= 0 {
		errs = append(errs, fmt.Errorf("prefetch window %s: must be positive", c.Ahead))
	}
	if c.Refresh <= 0 {
		errs = append(errs, fmt.Errorf("prefetch interval %s: must be positive", c.Refresh))
	}
	if c.Claims < 0 || c.Claims > MaxClaims {
		errs = append(errs, fmt.Errorf("claims in flight %d: want 0 (default) to %d", c.Claims, MaxClaims))
	}
	if c.ClaimAhead < 0 || c.ClaimAhead > MaxClaimAhead || (c.Ahead > 0 && c.ClaimAhead >= c.Ahead) {
		errs = append(errs, fmt.Errorf("claim ahead %s: want 0 to %s, and less than the prefetch window %s",
			c.ClaimAhead, MaxClaimAhead, c.Ahead))
	}
	return errors.Join(errs...)
}

// claims is the bound on claims in flight, with its default.
func (c WindowConfig) claims() int {
	if c.Claims == 0 {
		return DefaultClaims
	}
	return c.Claims
}

// Package sequencer runs sequences' schedules (docs/sequences.md, "Who
// writes what"): it finds the sequences whose next slot is due by the
// database clock, records the due slots as runs by the catch-up and
// overlap rules (plan.go), starts the runs' root steps through package
// runstep, and advances each sequence to its next slot, or ends it past
// its endAt. A slot of a sequence with overlap allow has its run written
// up to Lead before it (prepare.go), its root hooks due at the slot, and
// withdrawn if the sequence changes before the slot. It consumes the
// gateway's trigger requests the same way, as manual runs, and fails the
// pending steps whose hook the API cancelled or deleted.
//
// Every pass is a bounded number of bounded transactions: up to BatchSize
// sequences (or trigger requests, or steps) locked FOR UPDATE SKIP LOCKED,
// at most maxSlots slots read per sequence, at most MaxBatches
// transactions of each kind. So any number of scheduler replicas may scan
// at once; a slot's run is created once even so (the unique index on
// (sequence, slot) turns a second attempt into a no-op). Nothing is kept
// per sequence between passes, nor between transactions of a pass: memory
// depends on BatchSize, never on how many sequences there are.
package sequencer

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Defaults of Config.
const (
	DefaultInterval   = time.Second
	DefaultBatchSize  = 250
	DefaultMaxBatches = 10
	DefaultWorkers    = 2
	// statisticsEvery spaces Run's looks at whether the planner's
	// statistics of runs and steps lag behind (statistics.go).
	statisticsEvery = time.Second
	// vanishedEvery spaces Run's looks for steps whose hook is gone: that
	// look reads every running run's pending steps, so during a burst of
	// runs (passes back to back) it would cost in proportion to the runs in
	// flight at every pass. A cancelled step hook is rare; its run learns
	// of it within this.
	vanishedEvery = 30 * time.Second
)

// TxBeginner starts transactions; *pgxpool.Pool is one.
type TxBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Config tunes a Sequencer; zero values take the defaults.
type Config struct {
	// Interval is the wait between passes that found no more work.
	Interval time.Duration
	// BatchSize bounds the sequences (trigger requests, vanished steps)
	// one transaction handles; MaxBatches the transactions of each kind in
	// one pass. A pass that reached its cap is followed by another at once.
	BatchSize  int
	MaxBatches int
	// Workers is how many transactions start due sequences' runs (or
	// write them ahead) at once (each on its own sequences: SKIP LOCKED),
	// so that a burst of runs uses more than one of PostgreSQL's cores.
	Workers int
	// Lead is how long before its slot a run is written (prepare.go): up
	// to DefaultLead, at most 59 s; 0 takes the default.
	Lead time.Duration
}

// Sequencer runs the sequences' schedules.
type Sequencer struct {
	db  TxBeginner
	cfg Config
	log *slog.Logger
}

// New returns a Sequencer.
func New(db TxBeginner, cfg Config, log *slog.Logger) *Sequencer {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxBatches <= 0 {
		cfg.MaxBatches = DefaultMaxBatches
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Lead <= 0 {
		cfg.Lead = DefaultLead
	}
	cfg.Lead = min(cfg.Lead, maxLead)
	return &Sequencer{db: db, cfg: cfg, log: log.With("component", "sequencer")}
}

// Run scans until ctx is done: every Interval, or at once after a pass
// that reached its cap.
func (s *Sequencer) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lastVanished, lastStatistics time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		wait := s.cfg.Interval
		p := pass{vanished: time.Since(lastVanished) >= vanishedEvery,
			statistics: time.Since(lastStatistics) >= statisticsEvery}
		if p.vanished {
			lastVanished = time.Now()
		}
		if p.statistics {
			lastStatistics = time.Now()
		}
		more, err := s.scan(ctx, p)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.WarnContext(ctx, "sequence scan failed", "err", err)
		case more:
			wait = 0
		}
		timer.Reset(wait)
	}
}

// ScanOnce runs one pass: runs written ahead whose sequence changed since,
// due sequences, sequences whose next run to write ahead, trigger
// requests, then steps whose hook is gone, each in transactions of up to BatchSize until one
// finds fewer, at most MaxBatches of each, then the statistics' refresh.
// more reports that a kind stopped at its cap (more work may be waiting).
func (s *Sequencer) ScanOnce(ctx context.Context) (more bool, err error) {
	return s.scan(ctx, pass{vanished: true, statistics: true})
}

// pass says which of its less frequent parts a pass includes: the look for
// steps whose hook is gone, the statistics' refresh.
type pass struct {
	vanished, statistics bool
}

// scan is a pass.
func (s *Sequencer) scan(ctx context.Context, p pass) (more bool, err error) {
	type kind struct {
		name    string
		tx      txFunc
		workers int
	}
	// Withdrawals first: a sequence changed since its run was written ahead
	// is written ahead again only once that run is withdrawn.
	kinds := []kind{{"changed sequences' runs written ahead", s.withdrawTx, 1},
		{"due sequences", s.scheduleTx, s.cfg.Workers},
		{"sequences to write ahead", s.prepareTx, s.cfg.Workers},
		{"trigger requests", s.triggerTx, 1}}
	if p.vanished {
		kinds = append(kinds, kind{"steps whose hook is gone", s.vanishedTx, 1})
	}
	for _, kind := range kinds {
		capped, err := s.batches(ctx, kind.tx, kind.workers)
		if err != nil {
			return false, fmt.Errorf("%s: %w", kind.name, err)
		}
		more = more || capped
	}
	if p.statistics {
		if _, err := s.inTx(ctx, refreshStatistics); err != nil {
			return false, fmt.Errorf("statistics of runs: %w", err)
		}
	}
	return more, nil
}

// batches runs tx in transactions, on up to workers at once, each until one
// of its transactions handles fewer than BatchSize rows and leaves nothing
// behind, MaxBatches transactions in all; it reports whether it stopped at
// that cap. The first error stops every worker.
func (s *Sequencer) batches(ctx context.Context, tx txFunc, workers int) (bool, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var budget atomic.Int64
	budget.Store(int64(s.cfg.MaxBatches))
	var wg sync.WaitGroup
	for range min(workers, s.cfg.MaxBatches) {
		wg.Go(func() {
			for ctx.Err() == nil && budget.Add(-1) >= 0 {
				d, err := s.inTx(ctx, tx)
				if err != nil {
					cancel(err)
					return
				}
				if d.n < s.cfg.BatchSize && !d.more {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return false, err
	}
	return budget.Load() < 0, nil
}

// txFunc is one batch's work in a transaction: it says how many rows it
// took (the batch's fill) and what to log once it commits.
type txFunc func(context.Context, *store.Queries) (done, error)

// done is what a batch did: n rows taken, more when it left work behind
// that it could have taken (a sequence with more due slots than one scan
// reads), and its log line (none when msg is empty).
type done struct {
	n     int
	more  bool
	msg   string
	attrs []any
}

// inTx runs fn in a transaction, commits it and logs what it did: one line
// per batch that did anything.
func (s *Sequencer) inTx(ctx context.Context, fn txFunc) (done, error) {
	start := time.Now()
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return done{}, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	d, err := fn(ctx, store.New(tx))
	if err != nil {
		return done{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return done{}, fmt.Errorf("commit: %w", err)
	}
	if d.msg != "" {
		s.log.InfoContext(ctx, d.msg, append(d.attrs, "duration", time.Since(start))...)
	}
	return d, nil
}

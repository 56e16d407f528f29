package account

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Sweeping bounds: each round deletes at most maxBatches × sweepBatch rows
// of each kind, so a backlog is worked off over several rounds without a
// long transaction.
const (
	sweepInterval = 10 * time.Minute
	sweepBatch    = 1000
	maxBatches    = 100
)

// Sweeper deletes ended sessions, expired set-password links and sign-in
// failures whose window has ended. Nothing depends on it but the tables'
// size: every read checks the times itself.
type Sweeper struct {
	s   *Service
	log *slog.Logger
}

// NewSweeper returns a Sweeper of the Service's tables.
func NewSweeper(s *Service, log *slog.Logger) *Sweeper { return &Sweeper{s: s, log: log} }

// Run sweeps every 10 minutes until ctx ends. Several gateways may sweep
// at once.
func (w *Sweeper) Run(ctx context.Context) {
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := w.Sweep(ctx); err != nil && ctx.Err() == nil {
				w.log.WarnContext(ctx, "sweep dashboard sessions", "error", err)
			} else if n > 0 {
				w.log.InfoContext(ctx, "swept dashboard sessions, links and sign-in failures", "rows", n)
			}
		}
	}
}

// Sweep deletes what has ended and returns how many rows went.
func (w *Sweeper) Sweep(ctx context.Context) (int64, error) {
	q, cfg := w.s.q, w.s.cfg
	kinds := map[string]func() (int64, error){
		"sessions": func() (int64, error) {
			return q.DeleteExpiredSessions(ctx, store.DeleteExpiredSessionsParams{Idle: interval(cfg.SessionIdle), MaxRows: sweepBatch})
		},
		"links": func() (int64, error) { return q.DeleteExpiredPasswordTokens(ctx, sweepBatch) },
		"sign-in failures": func() (int64, error) {
			return q.DeleteStaleSigninFailures(ctx, store.DeleteStaleSigninFailuresParams{Span: interval(cfg.FailureWindow), MaxRows: sweepBatch})
		},
	}
	var total int64
	var errs []error
	for kind, del := range kinds {
		for range maxBatches {
			n, err := del()
			total += n
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", kind, err))
			}
			if err != nil || n < sweepBatch {
				break
			}
		}
	}
	return total, errors.Join(errs...)
}

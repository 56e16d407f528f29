package claim

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// rowClock is a store.DBTX whose queries note the local instant each row
// of their answer was read (answerClock, hold.go). One claim's: it is not
// safe for concurrent use.
type rowClock struct {
	store.DBTX
	arrived []time.Time
}

func (c *rowClock) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := c.DBTX.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return &clockedRows{Rows: rows, clock: c}, nil
}

// clockedRows notes the instant each row is read, before it is decoded.
type clockedRows struct {
	pgx.Rows
	clock *rowClock
}

func (r *clockedRows) Next() bool {
	if !r.Rows.Next() {
		return false
	}
	r.clock.arrived = append(r.clock.arrived, time.Now())
	return true
}

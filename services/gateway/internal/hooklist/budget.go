package hooklist

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// MaxPageBytes is the byte budget of a page: a page ends before the hook
// that would take the hooks it holds past 4 MiB, as read from PostgreSQL
// (the data payload, nearly all of it for large hooks, and the other
// fields), even when fewer than limit hooks fit. It always holds at least
// one hook, however large. meta.nextCursor continues after the last hook
// of the page exactly as when the limit ends it.
//
// Without it a page was bounded only by limit x the largest payload: 1,000
// hooks of 1 MiB made a 1 GB response, built whole in the gateway's memory,
// and a few such requests at once could exhaust it.
const MaxPageBytes = 4 << 20

// ErrBusy: the budget shared with other requests (Query.Take) could not
// spare the page's first row.
var ErrBusy = errors.New("hooklist: no room for the page in the bytes in flight")

// rowBudget is what the rows of a page may still take. It is shared by the
// page's queries.
type rowBudget struct {
	left    int  // bytes
	rows    int  // rows admitted
	largest int  // bytes of the largest row admitted
	cut     bool // a row did not fit: the page ends before it
	// take is Query.Take; refused when it refused the first row.
	take    func(bytes int) bool
	refused bool
}

// budgeted runs the list queries with rows that end at the budget.
// The generated :many functions read rows until Next says no more; here
// Next says so at the first row that does not fit, which is then neither
// scanned nor kept, and closing the rows discards what remains of the
// result as it arrives.
type budgeted struct {
	db store.DBTX
	b  *rowBudget
}

func (d budgeted) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return d.db.Exec(ctx, sql, args...)
}

func (d budgeted) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := d.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return &budgetRows{Rows: rows, b: d.b}, nil
}

func (d budgeted) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return d.db.QueryRow(ctx, sql, args...)
}

type budgetRows struct {
	pgx.Rows
	b *rowBudget
}

// Next admits the next row if it fits the budget, or if it is the page's
// first.
func (r *budgetRows) Next() bool {
	if r.b.cut || !r.Rows.Next() {
		return false
	}
	size := 0
	for _, v := range r.Rows.RawValues() {
		size += len(v)
	}
	if r.b.rows > 0 && size > r.b.left {
		r.b.cut = true
		return false
	}
	if r.b.take != nil && !r.b.take(size) {
		r.b.cut = true
		r.b.refused = r.b.rows == 0
		return false
	}
	r.b.left = max(0, r.b.left-size)
	r.b.rows++
	r.b.largest = max(r.b.largest, size)
	return true
}

package hooklist

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// CountCap is the most hooks totalItems counts; see the package doc.
const CountCap = 100_000

// Page is one page of hooks.
type Page struct {
	Hooks []hook.Hook
	// TotalItems counts the hooks matching the filters, at most CountCap.
	TotalItems int64
	// TotalCapped says that more than CountCap hooks match.
	TotalCapped bool
	// NextCursor continues after this page; empty on the last page.
	NextCursor string
}

// Lister lists hooks from PostgreSQL.
type Lister struct {
	db store.DBTX
	q  *store.Queries
}

// NewLister returns a Lister on pool. A page and its count may run at the
// same time, on two connections.
func NewLister(pool *pgxpool.Pool) *Lister {
	db := plannedPerRun{pool}
	return &Lister{db: db, q: store.New(db)}
}

// List returns a page of the project's hooks. A cursor made for another
// query or project is an *InvalidError naming the cursor parameter.
//
// Without a filter on tags or on the other time column than the sort's,
// the page and the count run at the same time. With one, the count runs
// first and picks
// the page's plan: when at most CountCap hooks match, they are selected
// first and sorted (a cost that grows with the count, bounded by the cap),
// instead of walking the sort column's index through the rows the filter
// rejects (a cost that grows with those rows, which nothing bounds).
func (l *Lister) List(ctx context.Context, projectID uuid.UUID, q Query) (Page, error) {
	if q.Limit < 1 || q.Limit > MaxLimit {
		return Page{}, invalid(ParamLimit, "must be an integer from 1 to %d", MaxLimit)
	}
	h := q.hash(projectID)
	if q.Cursor != nil && q.Cursor.query != h {
		return Page{}, invalid(ParamCursor, "does not belong to this query: use it with the filters and sort "+
			"of the request that returned it (only limit may change), or start again without cursor")
	}
	var (
		pg  page
		n   int64
		err error
	)
	if q.selective() {
		pg, n, err = l.countThenPage(ctx, projectID, q)
	} else {
		pg, n, err = l.pageAndCount(ctx, projectID, q)
	}
	if err != nil {
		return Page{}, err
	}
	rows := pg.hooks
	if len(rows) > q.Limit {
		rows = rows[:q.Limit]
		pg.more = true
	}
	p := Page{Hooks: hook.FromRows(rows), TotalItems: min(n, CountCap), TotalCapped: n > CountCap}
	if pg.more {
		last := rows[len(rows)-1]
		p.NextCursor = Cursor{At: sortValue(q.SortBy, last), ID: last.ID, query: h}.encode()
	}
	return p, nil
}

// selective reports a filter that the sort column's index cannot bound: on
// tags, or on the time column the hooks are not sorted by.
func (q Query) selective() bool {
	if len(q.Tags) > 0 {
		return true
	}
	if q.SortBy == SortByPostAt {
		return q.CreatedAtAfter != nil || q.CreatedAtBefore != nil
	}
	return q.PostAtAfter != nil || q.PostAtBefore != nil
}

func (l *Lister) pageAndCount(ctx context.Context, projectID uuid.UUID, q Query) (page, int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	counted := make(chan countResult, 1)
	go func() {
		n, err := l.count(ctx, projectID, q)
		counted <- countResult{n, err}
	}()
	pg, err := l.page(ctx, projectID, q, false)
	if err != nil {
		return page{}, 0, fmt.Errorf("list hooks: %w", err)
	}
	c := <-counted
	if c.err != nil {
		return page{}, 0, fmt.Errorf("count hooks: %w", c.err)
	}
	return pg, c.n, nil
}

type countResult struct {
	n   int64
	err error
}

func (l *Lister) countThenPage(ctx context.Context, projectID uuid.UUID, q Query) (page, int64, error) {
	n, err := l.count(ctx, projectID, q)
	if err != nil {
		return page{}, 0, fmt.Errorf("count hooks: %w", err)
	}
	pg, err := l.page(ctx, projectID, q, n <= CountCap)
	if err != nil {
		return page{}, 0, fmt.Errorf("list hooks: %w", err)
	}
	return pg, n, nil
}

// page is what a page's queries read: up to limit+1 hooks (one more than
// the limit tells that a next page exists without counting), fewer when
// the byte budget ended the page first (more is then set).
type page struct {
	hooks []store.Hook
	more  bool
}

// firstChunk is how many rows the first query of a page reads: few, so
// that a page of large hooks reads little past its byte budget (with 1 MB
// hooks: four rows, then one that does not fit). The next query reads as
// many rows as the rest of the budget holds at the largest row seen so
// far, so a page of small hooks takes two queries.
const firstChunk = 4

// page reads the page's hooks in one or more queries, each continuing
// after the last row of the one before (the keyset, as a next page does),
// and stops at limit+1 rows, at MaxPageBytes or at a row q.Take refuses,
// whichever comes first.
// The rows of a query beyond the budget are discarded as they arrive
// (rowBudget), so the memory a page takes is bounded by the budget plus
// one row, not by limit rows. few selects the matching hooks before
// sorting them (see List).
func (l *Lister) page(ctx context.Context, projectID uuid.UUID, q Query, few bool) (page, error) {
	want := q.Limit + 1
	b := &rowBudget{left: MaxPageBytes, take: q.Take}
	qs := store.New(budgeted{db: l.db, b: b})
	var hooks []store.Hook
	for len(hooks) < want && !b.cut {
		a := scanArgs(projectID, q)
		n := min(want-len(hooks), firstChunk)
		if len(hooks) > 0 {
			n = min(want-len(hooks), b.left/max(1, b.largest)+1)
		}
		a.RowLimit = int32(n)
		a.Few = few
		got, err := qs.ListHooks(ctx, a)
		if err != nil {
			return page{}, err
		}
		hooks = append(hooks, got...)
		if len(got) < n && !b.cut {
			break // no more hooks match
		}
		if len(hooks) > 0 {
			last := hooks[len(hooks)-1]
			q.Cursor = &Cursor{At: sortValue(q.SortBy, last), ID: last.ID}
		}
	}
	if b.refused {
		return page{}, ErrBusy
	}
	return page{hooks: hooks, more: b.cut}, nil
}

// count counts the matching hooks up to one more than CountCap, which tells
// a capped count from an exact one.
func (l *Lister) count(ctx context.Context, projectID uuid.UUID, q Query) (int64, error) {
	return l.q.CountHooks(ctx, store.CountHooksParams{
		ProjectID:     projectID,
		Status:        optional(q.Status),
		CreatedAfter:  q.CreatedAtAfter,
		CreatedBefore: q.CreatedAtBefore,
		PostAfter:     q.PostAtAfter,
		PostBefore:    q.PostAtBefore,
		Tags:          q.Tags,
		OrderingKey:   optional(q.OrderingKey),
		CountLimit:    CountCap + 1,
	})
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// scanArgs turns a query into the index range to scan. The sort column's
// bound on the starting side becomes the keyset position: (col, id) <
// (before, nil uuid) holds exactly when col < before, since no id sorts
// below the nil uuid (and symmetrically with the max uuid for ASC). The
// query then has one lower and one upper bound on the sort column, which
// PostgreSQL uses as the two ends of the index scan. A cursor replaces that
// position when it is tighter, which it always is unless it was forged.
func scanArgs(projectID uuid.UUID, q Query) store.ListHooksParams {
	a := store.ListHooksParams{ProjectID: projectID, Status: optional(q.Status), RowLimit: int32(q.Limit) + 1,
		ByPostAt: q.SortBy == SortByPostAt, Descending: q.Order == Desc, Tags: q.Tags, OrderingKey: optional(q.OrderingKey)}
	before, after := q.CreatedAtBefore, q.CreatedAtAfter
	a.OtherBefore, a.OtherAfter = q.PostAtBefore, q.PostAtAfter
	if q.SortBy == SortByPostAt {
		before, after = q.PostAtBefore, q.PostAtAfter
		a.OtherBefore, a.OtherAfter = q.CreatedAtBefore, q.CreatedAtAfter
	}
	var start *Cursor
	if q.Order == Desc {
		a.EndAt = after
		if before != nil {
			start = &Cursor{At: *before, ID: uuid.Nil}
		}
	} else {
		a.EndAt = before
		if after != nil {
			start = &Cursor{At: *after, ID: uuid.Max}
		}
	}
	if c := q.Cursor; c != nil && (start == nil || c.tighter(*start, q.Order)) {
		start = c
	}
	if start != nil {
		at := start.At
		a.KeyAt, a.KeyID = &at, start.ID
	}
	return a
}

// tighter reports whether scanning after c skips more than scanning after
// other does, in the order o.
func (c Cursor) tighter(other Cursor, o Order) bool {
	cmp := c.At.Compare(other.At)
	if cmp == 0 {
		// PostgreSQL orders uuids bytewise.
		cmp = bytes.Compare(c.ID[:], other.ID[:])
	}
	if o == Desc {
		return cmp < 0
	}
	return cmp > 0
}

func sortValue(by SortBy, h store.Hook) time.Time {
	if by == SortByPostAt {
		return h.PostAt
	}
	return h.CreatedAt
}

// plannedPerRun runs every statement as an unnamed one (pgx
// QueryExecModeCacheDescribe), which PostgreSQL plans with the actual
// values each time. The count needs that: its absent filters fold away
// and its bounds become index conditions only in such a plan. The generic
// plan that a cached prepared statement may switch to after five runs
// keeps the bounds as filters over the project's whole index, and the
// count becomes a sequential scan. Planning each run costs far less than
// that. (A page's query is planned the same way inside list_hooks.)
type plannedPerRun struct {
	db store.DBTX
}

func (p plannedPerRun) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return p.db.Exec(ctx, sql, prepend(args)...)
}

func (p plannedPerRun) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return p.db.Query(ctx, sql, prepend(args)...)
}

func (p plannedPerRun) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return p.db.QueryRow(ctx, sql, prepend(args)...)
}

func prepend(args []any) []any {
	return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
}

// Package hooklist lists a project's hooks for GET /v1/hooks: it validates
// the query parameters, pages with an opaque keyset cursor bound to its
// query, and counts the matching hooks.
//
// Paging. Hooks are ordered by (sort column, id) in the sort direction, and
// a page starts strictly after the last row of the previous one, so a page
// costs the same at any depth (no OFFSET) and paging is stable under
// inserts: every hook that existed when paging started is returned exactly
// once (as long as its sort value does not change), while hooks created
// meanwhile may or may not appear. The cursor carries that last row's sort
// value and id, a hash of the project and the normalised query (filters and
// sort, not the limit, so a client may change the page size between pages),
// and a checksum: a cursor used with another query, or damaged, is refused.
// The cursor is not signed with a secret: forging one only moves the start
// within the client's own project and query, never past the query's bounds.
//
// totalItems. Counting millions of rows on every page would cost far more
// than the page, so the count stops at CountCap: a query matching more
// reports CountCap with Page.TotalCapped set (meta.totalItemsCapped in the
// API). It counts the hooks matching the filters, whatever the cursor, and
// reads only an index (no table rows) unless filters on both time columns
// are given: at most CountCap+1 index entries.
//
// Plans. A page is an index range scan in the sort order that stops after
// limit+1 rows, run beside the count on a second connection. A filter on
// the other time column than the sort's, or on tags, cannot be part of
// that range; when one is given, the count runs first, and if it is not
// capped the matching hooks are selected by their own index (the tags':
// migration 00032) and sorted, so that the cost grows with the hooks that
// match rather than with those the filter skips. A filter on an ordering
// key reads that key's hooks only, through their own index (migration
// 00039), in createdAt order: sorted by createdAt, a page is one range of
// it, as above; sorted by postAt, the key's hooks are read and sorted, a
// cost that grows with the key's hooks, not the project's.
//
// Bounds. Every time filter is exclusive. PostgreSQL keeps microseconds, so
// a bound with a finer fraction is rounded outward to the microsecond
// instant that keeps exactly the hooks strictly inside it.
package hooklist

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

// Limits of the page size.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Statuses a hook can have, the values of the status filter.
var Statuses = []string{"pending", "completed", "failed", "retry"}

// SortBy names the column hooks are ordered by.
type SortBy string

// The sort columns.
const (
	SortByCreatedAt SortBy = "createdAt"
	SortByPostAt    SortBy = "postAt"
)

// Order is a sort direction.
type Order string

// The sort directions.
const (
	Desc Order = "DESC"
	Asc  Order = "ASC"
)

// Query is a validated list request.
type Query struct {
	// Status filters by status; empty for any.
	Status string
	SortBy SortBy
	Order  Order
	// Exclusive time bounds; nil for none. Before bounds are rounded up and
	// After bounds down to the microsecond (see the package doc).
	PostAtBefore, PostAtAfter, CreatedAtBefore, CreatedAtAfter *time.Time
	// Tags keeps the hooks that have every one of them, sorted; nil for
	// no filter.
	Tags []string
	// OrderingKey keeps the hooks of this ordering key (compared byte for
	// byte); empty for no filter.
	OrderingKey string
	// Limit is the page size, 1 to MaxLimit.
	Limit int
	// Cursor is where the page starts; nil for the first page.
	Cursor *Cursor
	// Take, when set, takes each row's bytes, as it is read, from a budget
	// shared with other requests (the gateway's bytes in flight): a row it
	// refuses ends the page before it, or, the page's first, fails the list
	// with ErrBusy. Not part of the query a cursor belongs to.
	Take func(bytes int) bool
}

// Names of the query parameters, as the API spells them.
const (
	ParamStatus          = "status"
	ParamLimit           = "limit"
	ParamCursor          = "cursor"
	ParamSortBy          = "sortBy"
	ParamSortOrder       = "sortOrder"
	ParamPostAtBefore    = "postAtBefore"
	ParamPostAtAfter     = "postAtAfter"
	ParamCreatedAtBefore = "createdAtBefore"
	ParamCreatedAtAfter  = "createdAtAfter"
	ParamTag             = "tag"
	ParamOrderingKey     = "orderingKey"
	// ParamOffset is no longer supported; it is named to reject it clearly.
	ParamOffset = "offset"
)

var params = []string{ParamStatus, ParamLimit, ParamCursor, ParamSortBy, ParamSortOrder,
	ParamPostAtBefore, ParamPostAtAfter, ParamCreatedAtBefore, ParamCreatedAtAfter, ParamTag, ParamOrderingKey}

// FieldError names one query parameter at fault.
type FieldError struct {
	Field   string
	Message string
}

// InvalidError lists every query parameter at fault. The HTTP layer answers
// it with 400 and one detail per problem.
type InvalidError struct {
	Problems []FieldError
}

func (e *InvalidError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Field + ": " + p.Message
	}
	return strings.Join(msgs, "; ")
}

func invalid(field, format string, args ...any) *InvalidError {
	return &InvalidError{Problems: []FieldError{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// Parse validates the query string of a list request and reports every
// parameter at fault at once. An empty cursor counts as none, so that a
// client which always sends `cursor=` works; any other empty value is
// refused. Unknown parameters are refused rather than ignored: a misspelt
// filter (sortorder, Status) would otherwise silently return a different
// list than the one asked for.
func Parse(values url.Values) (Query, error) {
	p := parser{values: values}
	p.checkNames()
	q := Query{
		Status:          p.status(),
		SortBy:          p.sortBy(),
		Order:           p.order(),
		Limit:           p.limit(),
		PostAtBefore:    p.bound(ParamPostAtBefore, ceilMicro),
		PostAtAfter:     p.bound(ParamPostAtAfter, floorMicro),
		CreatedAtBefore: p.bound(ParamCreatedAtBefore, ceilMicro),
		CreatedAtAfter:  p.bound(ParamCreatedAtAfter, floorMicro),
		Tags:            p.tags(),
		OrderingKey:     p.orderingKey(),
		Cursor:          p.cursor(),
	}
	p.window(ParamPostAtAfter, q.PostAtAfter, ParamPostAtBefore, q.PostAtBefore)
	p.window(ParamCreatedAtAfter, q.CreatedAtAfter, ParamCreatedAtBefore, q.CreatedAtBefore)
	if len(p.problems) > 0 {
		return Query{}, &InvalidError{Problems: p.problems}
	}
	return q, nil
}

type parser struct {
	values   url.Values
	problems []FieldError
}

func (p *parser) fail(field, format string, args ...any) {
	p.problems = append(p.problems, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// checkNames refuses offset and unknown names, in a stable order.
func (p *parser) checkNames() {
	names := make([]string, 0, len(p.values))
	for name := range p.values {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch {
		case name == ParamOffset:
			p.fail(name, "is not supported: page with cursor, passing the meta.nextCursor of the previous page")
		case !slices.Contains(params, name):
			p.fail(name, "is not a query parameter of this operation; the parameters are %s", strings.Join(params, ", "))
		}
	}
}

// value returns a parameter's value, and whether it is given (once).
func (p *parser) value(name string) (string, bool) {
	vs := p.values[name]
	if len(vs) > 1 {
		p.fail(name, "must be given at most once")
		return "", false
	}
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

func (p *parser) status() string {
	v, ok := p.value(ParamStatus)
	if ok && !slices.Contains(Statuses, v) {
		p.fail(ParamStatus, "must be one of %s", strings.Join(Statuses, ", "))
		return ""
	}
	return v
}

func (p *parser) sortBy() SortBy {
	v, ok := p.value(ParamSortBy)
	switch by := SortBy(v); {
	case !ok:
		return SortByCreatedAt
	case by == SortByCreatedAt, by == SortByPostAt:
		return by
	}
	p.fail(ParamSortBy, "must be %s or %s", SortByCreatedAt, SortByPostAt)
	return SortByCreatedAt
}

func (p *parser) order() Order {
	v, ok := p.value(ParamSortOrder)
	switch o := Order(strings.ToUpper(v)); {
	case !ok:
		return Desc
	case o == Asc, o == Desc:
		return o
	}
	p.fail(ParamSortOrder, "must be ASC or DESC (in any case)")
	return Desc
}

func (p *parser) limit() int {
	v, ok := p.value(ParamLimit)
	if !ok {
		return DefaultLimit
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		p.fail(ParamLimit, "must be an integer from 1 to %d", MaxLimit)
		return DefaultLimit
	}
	return n
}

// bound parses an RFC 3339 time filter and rounds it to the microsecond.
func (p *parser) bound(name string, round func(time.Time) time.Time) *time.Time {
	v, ok := p.value(name)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		hint := ""
		if strings.Contains(v, " ") {
			hint = " (a + in a query string must be encoded as %2B)"
		}
		p.fail(name, "must be an RFC 3339 date-time with an offset, such as 2026-01-02T15:04:05Z%s", hint)
		return nil
	}
	t = round(t.UTC())
	return &t
}

// window refuses an After bound that is not earlier than its Before bound:
// such a window is always empty, most likely by a swap of the two.
func (p *parser) window(afterName string, after *time.Time, beforeName string, before *time.Time) {
	if after != nil && before != nil && !after.Before(*before) {
		p.fail(afterName, "must be earlier than %s (both bounds are exclusive)", beforeName)
	}
}

// tags reads the tag filter: tag given once per tag, up to hook.MaxTags.
// They are sorted (and repeats dropped), so that their order makes no
// other query for the cursor.
func (p *parser) tags() []string {
	vs := p.values[ParamTag]
	if len(vs) > hook.MaxTags {
		p.fail(ParamTag, "must be given at most %d times (a hook has at most %d tags)", hook.MaxTags, hook.MaxTags)
		return nil
	}
	for _, v := range vs {
		if err := hook.ValidateTag(v); err != nil {
			p.fail(ParamTag, "%q %s", v, err)
			return nil
		}
	}
	if len(vs) == 0 {
		return nil
	}
	tags := slices.Clone(vs)
	slices.Sort(tags)
	return slices.Compact(tags)
}

// orderingKey reads the ordering key filter, by the rules a hook's
// orderingKey is created with (hook.ValidateKey): an empty value is
// refused, not taken for no filter, since no hook has that key.
func (p *parser) orderingKey() string {
	v, ok := p.value(ParamOrderingKey)
	if !ok {
		return ""
	}
	if err := hook.ValidateKey(v); err != nil {
		p.fail(ParamOrderingKey, "%s", err)
		return ""
	}
	return v
}

func (p *parser) cursor() *Cursor {
	v, _ := p.value(ParamCursor)
	if v == "" {
		return nil
	}
	c, err := decodeCursor(v)
	if err != nil {
		p.fail(ParamCursor, "%v", err)
		return nil
	}
	return &c
}

// floorMicro and ceilMicro round to PostgreSQL's precision: a hook stored at
// microsecond m is after t exactly when it is after floor(t), and before t
// exactly when it is before ceil(t).
func floorMicro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

func ceilMicro(t time.Time) time.Time {
	if f := t.Truncate(time.Microsecond); !f.Equal(t) {
		return f.Add(time.Microsecond)
	}
	return t
}

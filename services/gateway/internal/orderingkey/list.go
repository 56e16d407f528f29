package orderingkey

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/pagecursor"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Paging bounds, as for listing hooks and sequences.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	// maxCount caps TotalItems, as the other listings do.
	maxCount = 100_000
)

// InvalidError is a listing parameter at fault.
type InvalidError struct {
	Field, Message string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

// Page is a listing's query: its size and where it starts.
type Page struct {
	Limit int
	// Cursor is the previous page's NextCursor; empty: the first page.
	Cursor string
}

// ValidPage checks a listing's limit, 1 to MaxLimit (DefaultLimit when
// nil).
func ValidPage(limit *int, cursor *string) (Page, error) {
	pg := Page{Limit: DefaultLimit}
	if limit != nil {
		if *limit < 1 || *limit > MaxLimit {
			return Page{}, &InvalidError{Field: "limit", Message: fmt.Sprintf("must be from 1 to %d", MaxLimit)}
		}
		pg.Limit = *limit
	}
	if cursor != nil {
		pg.Cursor = *cursor
	}
	return pg, nil
}

// HeldPage is a page of held keys, in key order.
type HeldPage struct {
	Keys []Key
	// TotalItems counts the project's held keys, exactly up to maxCount
	// (then it is maxCount and Capped is set).
	TotalItems int64
	Capped     bool
	// NextCursor is empty on the last page.
	NextCursor string
}

// ListHeld returns a page of the project's held keys, in key order.
func (s *Service) ListHeld(ctx context.Context, projectID uuid.UUID, pg Page) (HeldPage, error) {
	scope := scopeOf(projectID)
	after, err := decodeCursor(pg.Cursor, scope)
	if err != nil {
		return HeldPage{}, err
	}
	q := store.New(s.pool)
	// One more than the page, to know whether another follows.
	rows, err := q.ListHeldOrderingKeys(ctx, store.ListHeldOrderingKeysParams{
		ProjectID: projectID, AfterKey: after, MaxRows: int32(pg.Limit + 1),
	})
	if err != nil {
		return HeldPage{}, fmt.Errorf("list held ordering keys: %w", err)
	}
	total, err := q.CountHeldOrderingKeys(ctx, store.CountHeldOrderingKeysParams{ProjectID: projectID, MaxCount: maxCount + 1})
	if err != nil {
		return HeldPage{}, fmt.Errorf("count held ordering keys: %w", err)
	}
	out := HeldPage{TotalItems: min(total, maxCount), Capped: total > maxCount, Keys: make([]Key, 0, min(len(rows), pg.Limit))}
	if len(rows) > pg.Limit {
		rows = rows[:pg.Limit]
		out.NextCursor = encodeCursor(rows[len(rows)-1].Key, scope)
	}
	for _, r := range rows {
		head := r.HeadHookID
		out.Keys = append(out.Keys, Key{Key: r.Key, HeadHookID: &head, Held: true, Unfinished: r.Unfinished})
	}
	return out, nil
}

// A cursor names the last key of a page, in the listing it came from (the
// project's held keys). Like the other listings' cursors it is opaque and
// checked, not secret: it only names a place in a listing the caller may
// read anyway.
const (
	cursorVersion = 1
	scopeLen      = 8
)

// scopeOf binds a cursor to the project's listing of held keys.
func scopeOf(projectID uuid.UUID) [scopeLen]byte {
	sum := sha256.Sum256(append([]byte("orderingkey/v1/held/"), projectID[:]...))
	var s [scopeLen]byte
	copy(s[:], sum[:])
	return s
}

// encodeCursor seals the scope and the key (pagecursor).
func encodeCursor(key string, scope [scopeLen]byte) string {
	return pagecursor.Seal(cursorVersion, append(scope[:], key...))
}

// decodeCursor returns the key a cursor of scope's listing names; "" for
// the first page, which comes before every key (a key is never empty).
func decodeCursor(s string, scope [scopeLen]byte) (string, error) {
	if s == "" {
		return "", nil
	}
	bad := &InvalidError{Field: "cursor", Message: "is not a cursor of this listing, or it was altered; " +
		"pass meta.nextCursor unchanged, or start again without cursor"}
	body, err := pagecursor.Open(s, cursorVersion)
	if err != nil || len(body) <= scopeLen || string(body[:scopeLen]) != string(scope[:]) {
		return "", bad
	}
	return string(body[scopeLen:]), nil
}

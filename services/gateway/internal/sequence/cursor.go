package sequence

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/pagecursor"
)

// Paging bounds, as for listing hooks.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	// maxCount caps totalItems, as the hooks list does.
	maxCount = 100_000
)

// cursor is where a page starts: strictly after the row with this sort
// value and id, in the listing named by scope. Like the hooks list's, it is
// opaque and checked, not secret: it only names a place in a listing the
// caller may read anyway.
type cursor struct {
	at    time.Time
	id    uuid.UUID
	scope [8]byte
}

// The cursor's body (pagecursor frames it): the sort value in microseconds
// since the Unix epoch, the id, the scope.
const (
	cursorVersion = 1
	bodyLen       = 8 + 16 + 8
)

// scopeOf binds a cursor to one listing: the kind (sequences, runs), the
// project, and the sequence whose runs are listed.
func scopeOf(kind string, projectID, sequenceID uuid.UUID) [8]byte {
	b := make([]byte, 0, 64)
	b = append(b, "sequence/v1/"...)
	b = append(b, kind...)
	b = append(b, projectID[:]...)
	b = append(b, sequenceID[:]...)
	sum := sha256.Sum256(b)
	var s [8]byte
	copy(s[:], sum[:])
	return s
}

func (c cursor) encode() string {
	b := make([]byte, 0, bodyLen)
	b = binary.BigEndian.AppendUint64(b, uint64(c.at.UnixMicro()))
	b = append(b, c.id[:]...)
	b = append(b, c.scope[:]...)
	return pagecursor.Seal(cursorVersion, b)
}

// decodeCursor reads a cursor of the listing scope; "" is the first page.
func decodeCursor(s string, scope [8]byte) (cursor, bool, error) {
	if s == "" {
		return cursor{}, false, nil
	}
	bad := &InvalidError{Problems: []Problem{{Field: "cursor", Message: "is not a cursor of this listing, or it was altered; " +
		"pass meta.nextCursor unchanged, with the same other parameters, or start again without cursor"}}}
	body, err := pagecursor.Open(s, cursorVersion)
	if err != nil || len(body) != bodyLen {
		return cursor{}, false, bad
	}
	c := cursor{at: time.UnixMicro(int64(binary.BigEndian.Uint64(body[0:8]))).UTC()}
	copy(c.id[:], body[8:24])
	copy(c.scope[:], body[24:32])
	if c.scope != scope {
		return cursor{}, false, bad
	}
	return c, true, nil
}

// Page is a listing's query: its size and where it starts.
type Page struct {
	Limit  int
	Cursor string
}

// ValidPage checks a listing's parameters: limit 1 to MaxLimit (default
// DefaultLimit); offset is refused, paging is by cursor.
func ValidPage(limit *int, cursor, offset *string) (Page, error) {
	var p problems
	pg := Page{Limit: DefaultLimit}
	if offset != nil {
		p.add("offset", "is not supported: page with cursor (meta.nextCursor)")
	}
	if limit != nil {
		if *limit < 1 || *limit > MaxLimit {
			p.add("limit", "must be from 1 to %d", MaxLimit)
		}
		pg.Limit = *limit
	}
	if cursor != nil {
		pg.Cursor = *cursor
	}
	return pg, p.err()
}

// firstPage is the keyset bound before every row: the newest first.
var (
	firstAt = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	firstID = uuid.Max
)

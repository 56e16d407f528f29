package hooklist

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/pagecursor"
)

// Cursor is where a page starts: strictly after the hook with this sort
// value and id, in a query with this hash.
type Cursor struct {
	At    time.Time
	ID    uuid.UUID
	query queryHash
}

// queryHash identifies a project and a normalised query (filters and sort).
type queryHash [8]byte

// The cursor's body (pagecursor frames it with a version and a checksum):
// sort value in microseconds since the Unix epoch, id, query hash. Binary
// and small: 41 bytes framed, 55 characters of base64url.
const (
	cursorVersion = 1
	bodyLen       = 8 + 16 + len(queryHash{})
)

var (
	errCursorInvalid = errors.New("is not a cursor this API returned, or it was altered; " +
		"pass meta.nextCursor unchanged, or start again without cursor")
	errCursorVersion = errors.New("was issued by another version of Sundial; start again without cursor")
)

// encode renders the cursor as URL-safe text.
func (c Cursor) encode() string {
	b := make([]byte, 0, bodyLen)
	b = binary.BigEndian.AppendUint64(b, uint64(c.At.UnixMicro()))
	b = append(b, c.ID[:]...)
	b = append(b, c.query[:]...)
	return pagecursor.Seal(cursorVersion, b)
}

// decodeCursor reads a cursor.
func decodeCursor(s string) (Cursor, error) {
	body, err := pagecursor.Open(s, cursorVersion)
	switch {
	case errors.Is(err, pagecursor.ErrVersion):
		return Cursor{}, errCursorVersion
	case err != nil || len(body) != bodyLen:
		return Cursor{}, errCursorInvalid
	}
	c := Cursor{At: time.UnixMicro(int64(binary.BigEndian.Uint64(body[0:8]))).UTC()}
	copy(c.ID[:], body[8:24])
	copy(c.query[:], body[24:])
	return c, nil
}

// hash identifies the query of a project: the filters and the sort, not the
// limit. Times are compared as instants, so that 10:00+01:00 and 09:00Z are
// the same bound.
func (q Query) hash(projectID uuid.UUID) queryHash {
	b := make([]byte, 0, 128)
	b = append(b, "hooklist/v1"...)
	b = append(b, projectID[:]...)
	for _, s := range []string{q.Status, string(q.SortBy), string(q.Order)} {
		b = append(b, 0)
		b = append(b, s...)
	}
	for _, t := range []*time.Time{q.PostAtBefore, q.PostAtAfter, q.CreatedAtBefore, q.CreatedAtAfter} {
		b = append(b, 0)
		if t != nil {
			b = strconv.AppendInt(b, t.UnixMicro(), 10)
		}
	}
	// Only a query with tags adds them, so that cursors made before tags
	// existed stay valid.
	for _, t := range q.Tags {
		b = append(b, 1)
		b = append(b, t...)
	}
	// Likewise the ordering key, after a byte that no tag and no key
	// holds.
	if q.OrderingKey != "" {
		b = append(b, 2)
		b = append(b, q.OrderingKey...)
	}
	sum := sha256.Sum256(b)
	var h queryHash
	copy(h[:], sum[:])
	return h
}

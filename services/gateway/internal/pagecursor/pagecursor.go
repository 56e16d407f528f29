// Package pagecursor seals and opens the opaque cursors of the API's keyset
// listings (hooks, sequences and runs, held ordering keys, bulk jobs): a
// version byte, the listing's own bytes (where the page starts, and what
// binds it to its listing), and a checksum of both, in base64url. The
// checksum catches damage and casual edits; it is no secret, and needs not
// be: a cursor only names a place in a listing its caller may read anyway.
// Each listing says what its bytes hold; this package only frames them.
package pagecursor

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
)

// checksumLen is the bytes of SHA-256 kept as the checksum.
const checksumLen = 8

var (
	// ErrInvalid is text that is not a sealed cursor, or one altered.
	ErrInvalid = errors.New("not a cursor, or altered")
	// ErrVersion is a cursor sealed with another version byte.
	ErrVersion = errors.New("a cursor of another version")
)

// Seal frames body under version, URL-safe (no padding, nothing to escape in
// a query string).
func Seal(version byte, body []byte) string {
	b := make([]byte, 0, 1+len(body)+checksumLen)
	b = append(b, version)
	b = append(b, body...)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:checksumLen]...))
}

// Open returns the body Seal framed under version: ErrVersion for a cursor
// of another version, ErrInvalid for anything else that is not one.
func Open(s string, version byte) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, ErrInvalid
	}
	if b[0] != version {
		return nil, ErrVersion
	}
	if len(b) < 1+checksumLen {
		return nil, ErrInvalid
	}
	framed, sum := b[:len(b)-checksumLen], b[len(b)-checksumLen:]
	want := sha256.Sum256(framed)
	if string(want[:checksumLen]) != string(sum) {
		return nil, ErrInvalid
	}
	return framed[1:], nil
}

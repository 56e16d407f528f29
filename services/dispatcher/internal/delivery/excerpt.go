package delivery

import (
	"io"
	"strings"
	"unicode/utf8"
)

// readExcerpt reads at most c.excerpt bytes of the body as valid UTF-8.
// A body that breaks off early (the connection closed mid-answer, or the
// deadline hit) is an error; a body shorter than the excerpt is not.
func (c *Client) readExcerpt(body io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(body, int64(c.excerpt)))
	return Excerpt(b, len(b) == c.excerpt), err
}

// Excerpt makes b fit to store and show: valid UTF-8 without NUL bytes
// (PostgreSQL text cannot hold them). When b was cut short, a character
// split by the cut is dropped rather than shown as garbage.
func Excerpt(b []byte, cut bool) string {
	if cut {
		b = trimPartialRune(b)
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

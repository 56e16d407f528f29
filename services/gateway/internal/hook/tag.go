package hook

import (
	"errors"
	"fmt"
	"strings"
)

// A hook's tags are a small set of short names that lists filter on and
// bulk actions select by (docs/choices.md, "Hook tags").

// Bounds of a hook's tags.
const (
	MaxTags      = 10
	MaxTagLength = 64
)

// ErrInvalidTag is a tag no hook can have.
var ErrInvalidTag = fmt.Errorf("must be 1 to %d characters from A-Z, a-z, 0-9, '_', '.', ':' and '-'", MaxTagLength)

// ValidateTag checks one tag's form. Its characters need no quoting in a
// PostgreSQL array literal (tagsLiteral) nor in a query string.
func ValidateTag(tag string) error {
	if len(tag) == 0 || len(tag) > MaxTagLength {
		return ErrInvalidTag
	}
	for _, c := range []byte(tag) {
		if !tagByte(c) {
			return ErrInvalidTag
		}
	}
	return nil
}

func tagByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == ':' || c == '-'
}

// errRepeatedTag is a tag given twice.
var errRepeatedTag = errors.New("repeats an earlier tag")

// validTags returns the hook's tags, nil for none (an empty list is none),
// naming each one at fault as tags[i].
func validTags(tags []string, p *problems) []string {
	if len(tags) > MaxTags {
		p.add("tags", "must hold at most %d tags, has %d", MaxTags, len(tags))
		return nil
	}
	if len(tags) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(tags))
	bad := false
	for i, t := range tags {
		err := ValidateTag(t)
		if err == nil && seen[t] {
			err = errRepeatedTag
		}
		if err != nil {
			p.add(fmt.Sprintf("tags[%d]", i), "%s", err)
			bad = true
		}
		seen[t] = true
	}
	if bad {
		return nil
	}
	return tags
}

// tagsLiteral is tags as a PostgreSQL array literal, empty for none.
func tagsLiteral(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	return "{" + strings.Join(tags, ",") + "}"
}

package dispatch

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestCanonicalIDIsUUIDString: a delivery's ids (its body's id, its
// result's) are spelled as uuid.UUID.String() spells them, whichever way
// the message spelled them.
func TestCanonicalIDIsUUIDString(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("0190b6a4-7f1e-7c3a-9f5e-2a1b3c4d5e6f")
	for _, s := range []string{
		id.String(), strings.ToUpper(id.String()), "{" + id.String() + "}",
		"urn:uuid:" + id.String(), strings.ReplaceAll(id.String(), "-", ""),
	} {
		parsed, err := uuid.Parse(s)
		require.NoError(t, err, s)
		require.Equal(t, id.String(), canonical(s, parsed), s)
	}
}

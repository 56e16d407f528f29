package orderingkey

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestCursorNamesAKeyOfItsListingOnly: a cursor gives back the key it was
// made with, any key's bytes included; one of another project's listing,
// or altered, is refused naming cursor.
func TestCursorNamesAKeyOfItsListingOnly(t *testing.T) {
	t.Parallel()
	mine, theirs := scopeOf(uuid.New()), scopeOf(uuid.New())
	for _, key := range []string{"a", "account/42 100%", "~~~", string(make([]byte, 255))} {
		got, err := decodeCursor(encodeCursor(key, mine), mine)
		require.NoError(t, err)
		require.Equal(t, key, got)
	}
	first, err := decodeCursor("", mine)
	require.NoError(t, err)
	require.Empty(t, first, "no cursor: before every key")

	c := encodeCursor("k", mine)
	altered := []byte(c)
	altered[len(altered)/2] ^= 1
	for _, bad := range []string{encodeCursor("k", theirs), string(altered), "not base64!", "AQ"} {
		_, err := decodeCursor(bad, mine)
		var invalid *InvalidError
		require.ErrorAs(t, err, &invalid, bad)
		require.Equal(t, "cursor", invalid.Field)
	}
}

func TestValidPage(t *testing.T) {
	t.Parallel()
	pg, err := ValidPage(nil, nil)
	require.NoError(t, err)
	require.Equal(t, Page{Limit: DefaultLimit}, pg)
	for _, limit := range []int{0, MaxLimit + 1} {
		_, err := ValidPage(&limit, nil)
		var invalid *InvalidError
		require.ErrorAs(t, err, &invalid)
		require.Equal(t, "limit", invalid.Field)
	}
}

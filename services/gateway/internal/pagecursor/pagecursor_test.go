package pagecursor_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/pagecursor"
)

func TestASealedBodyOpensAndNothingElseDoes(t *testing.T) {
	t.Parallel()
	body := []byte("where the page starts")
	s := pagecursor.Seal(3, body)
	got, err := pagecursor.Open(s, 3)
	require.NoError(t, err)
	require.Equal(t, body, got)

	_, err = pagecursor.Open(s, 4)
	require.ErrorIs(t, err, pagecursor.ErrVersion)
	altered := []byte(s)
	altered[len(altered)/2] ^= 1
	for _, bad := range []string{"", "!!", string(altered), s[:len(s)-2]} {
		_, err = pagecursor.Open(bad, 3)
		require.Error(t, err, "%q", bad)
	}
}

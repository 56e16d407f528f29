package claim

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestParseNote(t *testing.T) {
	t.Parallel()
	id := uuid.New()
	n, ok := parseNote(id.String() + " 1795000000123456")
	require.True(t, ok)
	require.Equal(t, id, n.id)
	require.True(t, time.UnixMicro(1795000000123456).Equal(n.runAt))
	require.False(t, n.keyed)
	n, ok = parseNote(id.String() + " 1795000000123456 k")
	require.True(t, ok)
	require.True(t, n.keyed, "a hook with an ordering key")
	for _, bad := range []string{"", id.String(), "not-a-uuid 1", id.String() + " soon", id.String() + " 1 2", id.String() + " 1 k k"} {
		_, ok := parseNote(bad)
		require.False(t, ok, bad)
	}
}

package account

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHashPasswordIsArgon2idPHC(t *testing.T) {
	t.Parallel()
	h, err := HashPassword("a long enough password")
	require.NoError(t, err)
	require.Regexp(t, `^\$argon2id\$v=19\$m=65536,t=1,p=2\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`, h)
	other, err := HashPassword("a long enough password")
	require.NoError(t, err)
	require.NotEqual(t, h, other, "a salt of its own")

	ok, err := checkPassword("a long enough password", h)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = checkPassword("a long enough passworD", h)
	require.NoError(t, err)
	require.False(t, ok)
	_, err = checkPassword("x", "$2b$10$bcrypt")
	require.Error(t, err)
}

func TestHashPasswordRefusesShortAndHugePasswords(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "123456789", string(make([]byte, MaxPasswordLen+1))} {
		_, err := HashPassword(p)
		require.ErrorIs(t, err, ErrWeakPassword)
	}
}

func TestRolesAreOrdered(t *testing.T) {
	t.Parallel()
	require.True(t, Owner.AtLeast(Member))
	require.True(t, Member.AtLeast(Member))
	require.False(t, Viewer.AtLeast(Member))
	require.False(t, Member.AtLeast(Owner))
	require.False(t, Role("admin").AtLeast(Viewer))
	require.False(t, Owner.AtLeast(Role("")), "an unknown minimum allows nothing")
	_, err := ParseRole("admin")
	require.ErrorIs(t, err, ErrBadRole)
}

func TestCSRFTokenIsDerivedFromTheSession(t *testing.T) {
	t.Parallel()
	require.Equal(t, CSRFToken("a"), CSRFToken("a"))
	require.NotEqual(t, CSRFToken("a"), CSRFToken("b"))
	require.NotContains(t, CSRFToken("session-token"), "session-token")
}

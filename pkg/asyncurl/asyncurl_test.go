package asyncurl_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/asyncurl"
)

var (
	secret = []byte("0123456789abcdef0123456789abcdef")
	hookID = uuid.MustParse("0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f")
)

// TestTokenVector pins the token: the gateway and the dispatcher must agree
// on it across versions, so a change here breaks URLs already sent.
func TestTokenVector(t *testing.T) {
	t.Parallel()
	// printf '0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f.7' | openssl dgst -sha256 -hmac 0123456789abcdef0123456789abcdef -binary | basenc --base64url | tr -d =
	require.Equal(t, "ddAKCT-X5KMREy9gMGniETtzintgjjXdnrYZ5O0GEt8", asyncurl.Token(secret, hookID, 7))
}

func TestValid(t *testing.T) {
	t.Parallel()
	token := asyncurl.Token(secret, hookID, 7)
	require.True(t, asyncurl.Valid(secret, hookID, 7, token))
	require.False(t, asyncurl.Valid(secret, hookID, 8, token), "another lease")
	require.False(t, asyncurl.Valid(secret, uuid.New(), 7, token), "another hook")
	require.False(t, asyncurl.Valid([]byte("another secret, also 32 bytes.."), hookID, 7, token), "another project")
	require.False(t, asyncurl.Valid(secret, hookID, 7, ""), "no token")
	require.False(t, asyncurl.Valid(secret, hookID, 7, token[:len(token)-1]), "cut short")
}

func TestURLs(t *testing.T) {
	t.Parallel()
	token := asyncurl.Token(secret, hookID, 7)
	for _, base := range []string{"https://sundial.example.com", "https://sundial.example.com/"} {
		ack, nack := asyncurl.URLs(base, secret, hookID, 7)
		prefix := "https://sundial.example.com/v1/async/" + hookID.String() + "/7/" + token
		require.Equal(t, prefix+"/ack", ack)
		require.Equal(t, prefix+"/nack", nack)
	}
}

// TestURLsSpellTheHookIDAsItsString covers the URL's own spelling of the
// id (it is not id.String(), which allocates) for ids of every digit.
func TestURLsSpellTheHookIDAsItsString(t *testing.T) {
	t.Parallel()
	ids := []uuid.UUID{uuid.Nil, uuid.Max, hookID}
	for range 20 {
		ids = append(ids, uuid.New())
	}
	for _, id := range ids {
		ack, _ := asyncurl.URLs("https://s.example", secret, id, 12345678901)
		require.Equal(t, "https://s.example/v1/async/"+id.String()+"/12345678901/"+asyncurl.Token(secret, id, 12345678901)+"/ack", ack)
	}
}

func TestValidTimeoutIsOneSecondToADay(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]bool{0: false, 1: true, 86400: true, 86401: false, -5: false} {
		require.Equal(t, want, asyncurl.ValidTimeout(n), n)
	}
}

func TestRedacted(t *testing.T) {
	t.Parallel()
	token := asyncurl.Token(secret, hookID, 7)
	ack, nack := asyncurl.URLs("https://sundial.example.com/base", secret, hookID, 7)
	prefix := "https://sundial.example.com/base/v1/async/" + hookID.String() + "/7/"
	got, gotToken := asyncurl.Redacted(ack)
	require.Equal(t, prefix+"[redacted]/ack", got)
	require.Equal(t, token, gotToken)
	got, gotToken = asyncurl.Redacted(nack)
	require.Equal(t, prefix+"[redacted]/nack", got)
	require.Equal(t, token, gotToken)
	for _, other := range []string{"", "https://x.example/v1/async/" + hookID.String() + "/7/" + token,
		"https://x.example/v1/async/" + hookID.String() + "/7//ack", "https://x.example/" + token + "/ack"} {
		got, gotToken := asyncurl.Redacted(other)
		require.Equal(t, "[redacted]", got, other)
		require.Empty(t, gotToken, other)
	}
}

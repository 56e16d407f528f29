package signing

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// standardVector is testdata/standard_webhooks.json, the Standard Webhooks
// libraries' published vector (its source is in the file).
type standardVector struct {
	Secret    string `json:"secret"`
	ID        string `json:"id"`
	Timestamp int64  `json:"timestamp"`
	Body      string `json:"body"`
	Signature string `json:"signature"`
}

func loadStandardVector(t *testing.T) standardVector {
	t.Helper()
	raw, err := os.ReadFile("testdata/standard_webhooks.json")
	require.NoError(t, err)
	var v standardVector
	require.NoError(t, json.Unmarshal(raw, &v))
	require.NotEmpty(t, v.Signature)
	return v
}

// sundialKeyFor returns the Sundial signing key whose random part is the
// bytes of a whsec_ secret, as the gateway would have made it.
func sundialKeyFor(t *testing.T, secret string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, StandardSecretPrefix))
	require.NoError(t, err)
	return keyPrefix + base64.RawURLEncoding.EncodeToString(raw)
}

func TestStandardEntryMatchesThePublishedVector(t *testing.T) {
	t.Parallel()
	v := loadStandardVector(t)
	key := sundialKeyFor(t, v.Secret)
	require.Equal(t, v.Secret, StandardSecret(key), "the secret shown to receivers")
	require.Equal(t, v.Signature, StandardEntry(key, v.ID, v.Timestamp, []byte(v.Body)))
}

func TestStandardKeyOfAGatewayKeyIsItsRandomBytes(t *testing.T) {
	t.Parallel()
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	key := "sdsig_" + base64.RawURLEncoding.EncodeToString(raw)
	require.Equal(t, raw, StandardKey(key))
	require.Equal(t, "whsec_"+base64.StdEncoding.EncodeToString(raw), StandardSecret(key))
	// Keys of another form (hand-made, too short, not base64url) sign with
	// the string's bytes, and their whsec_ secret says so.
	for _, other := range []string{"sig_test_active_key", "sdsig_short", "sdsig_" + strings.Repeat("!", 43)} {
		require.Equal(t, []byte(other), StandardKey(other), other)
		require.Equal(t, "whsec_"+base64.StdEncoding.EncodeToString([]byte(other)), StandardSecret(other))
	}
}

func TestSetSchemeSendsTheSchemesHeaders(t *testing.T) {
	t.Parallel()
	names := NewHeaders(DefaultHeaderPrefix)
	keys := []string{"sdsig_" + strings.Repeat("A", 43), "sig_retiring"}
	body := []byte(`{"a":1}`)
	const id, ts = "0190b1c2-0000-7000-8000-000000000001", int64(1700000000)
	sundialHeaders := []string{"Sundial-Id", "Sundial-Timestamp", "Sundial-Signature", "X-Sundial-Signature"}
	standardHeaders := []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"}
	for _, tc := range []struct {
		scheme       SignatureScheme
		sundial, std bool
	}{
		{SchemeSundial, true, false},
		{SchemeStandard, false, true},
		{SchemeBoth, true, true},
		{"", true, false}, // unset: the default
	} {
		h := http.Header{}
		names.SetScheme(h, tc.scheme, id, keys, ts, body)
		for _, n := range sundialHeaders {
			require.Equal(t, tc.sundial, h.Get(n) != "", "%s: %s", tc.scheme, n)
		}
		for _, n := range standardHeaders {
			require.Equal(t, tc.std, h.Get(n) != "", "%s: %s", tc.scheme, n)
		}
		if tc.std {
			require.Equal(t, id, h.Get("webhook-id"))
			require.Equal(t, "1700000000", h.Get("webhook-timestamp"))
			// Both keys sign during a rotation, active first.
			require.Equal(t, StandardEntry(keys[0], id, ts, body)+" "+StandardEntry(keys[1], id, ts, body),
				h.Get("webhook-signature"))
		}
		if tc.sundial {
			require.Equal(t, Header(keys, ts, body), h.Get("Sundial-Signature"))
		}
	}
	plain := http.Header{}
	names.Set(plain, id, keys, ts, body)
	both := http.Header{}
	names.SetScheme(both, SchemeSundial, id, keys, ts, body)
	require.Equal(t, both, plain, "Set is SetScheme with the default scheme")
}

func TestParseSignatureScheme(t *testing.T) {
	t.Parallel()
	for _, s := range SignatureSchemes {
		got, err := ParseSignatureScheme(string(s))
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	for _, bad := range []string{"", "Standard", "svix", "both "} {
		_, err := ParseSignatureScheme(bad)
		require.ErrorContains(t, err, `"sundial", "standard" or "both"`, bad)
	}
}

func TestVerifyStandard(t *testing.T) {
	t.Parallel()
	keys := []string{"sdsig_" + strings.Repeat("B", 43), "sdsig_" + strings.Repeat("C", 43)}
	body := []byte(`{"a":1}`)
	now := time.Unix(1700000000, 0)
	h := http.Header{}
	NewHeaders(DefaultHeaderPrefix).SetScheme(h, SchemeStandard, "hook-1", keys, now.Unix(), body)
	for _, k := range keys {
		require.True(t, VerifyStandard(k, h, body, now, 5*time.Minute), "each key of a rotation")
	}
	require.False(t, VerifyStandard(keys[0], h, []byte(`{"a":2}`), now, 5*time.Minute), "another body")
	require.False(t, VerifyStandard("sdsig_"+strings.Repeat("D", 43), h, body, now, 5*time.Minute), "another key")
	require.False(t, VerifyStandard(keys[0], h, body, now.Add(6*time.Minute), 5*time.Minute), "stale")
	require.False(t, VerifyStandard(keys[0], http.Header{}, body, now, 5*time.Minute), "no headers")
}

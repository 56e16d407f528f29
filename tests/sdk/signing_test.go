package sdk

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/signing"
	sundial "github.com/sundial-run/sundial/sdk"
)

// newSigningKey makes a key as the gateway does: "sdsig_" + base64url of 32
// random bytes.
func newSigningKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "sdsig_" + base64.RawURLEncoding.EncodeToString(b)
}

// TestSDKVerifiesTheServiceSigner signs with the service's own signer,
// under each scheme and during a rotation (two keys), and verifies with
// the SDK given either key, as the key or as its standardSecret.
func TestSDKVerifiesTheServiceSigner(t *testing.T) {
	t.Parallel()
	active, retiring := newSigningKey(t), newSigningKey(t)
	body := []byte(`{"id":"0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f","path":"/x","data":{"a":[1, 2]}}`)
	const id = "0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f"
	for _, scheme := range signing.SignatureSchemes {
		t.Run(string(scheme), func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			signing.NewHeaders(signing.DefaultHeaderPrefix).SetScheme(h, scheme, id, []string{active, retiring}, time.Now().Unix(), body)
			for _, key := range []string{active, retiring, signing.StandardSecret(active), signing.StandardSecret(retiring)} {
				require.NoError(t, sundial.Verify([]string{key}, h, body, 0), "key %s…", key[:8])
			}
			err := sundial.Verify([]string{newSigningKey(t)}, h, body, 0)
			require.True(t, errors.Is(err, sundial.ErrBadSignature), "another key: %v", err)
			err = sundial.Verify([]string{active}, h, append(body, ' '), 0)
			require.True(t, errors.Is(err, sundial.ErrBadSignature), "another body: %v", err)
		})
	}
}

// TestSDKRefusesOldServiceSignatures: a signature the service made 6
// minutes ago is a replay to the SDK.
func TestSDKRefusesOldServiceSignatures(t *testing.T) {
	t.Parallel()
	key := newSigningKey(t)
	body := []byte(`{}`)
	for _, scheme := range []signing.SignatureScheme{signing.SchemeSundial, signing.SchemeStandard} {
		h := http.Header{}
		signing.NewHeaders(signing.DefaultHeaderPrefix).SetScheme(h, scheme, "id", []string{key}, time.Now().Add(-6*time.Minute).Unix(), body)
		err := sundial.Verify([]string{key}, h, body, 0)
		require.True(t, errors.Is(err, sundial.ErrTimestamp), "%s: %v", scheme, err)
		require.NoError(t, sundial.Verify([]string{key}, h, body, 10*time.Minute), scheme)
	}
}

// TestSDKVerifiesUnderAHeaderPrefix: a deployment with
// SUNDIAL_HEADER_PREFIX=Acme signs Acme-Signature.
func TestSDKVerifiesUnderAHeaderPrefix(t *testing.T) {
	t.Parallel()
	key := newSigningKey(t)
	body := []byte(`{"a":1}`)
	h := http.Header{}
	signing.NewHeaders("Acme").Set(h, "id", []string{key}, time.Now().Unix(), body)
	require.NoError(t, sundial.NewVerifier([]string{key}, sundial.WithHeaderPrefix("Acme")).Verify(h, body))
	require.ErrorIs(t, sundial.Verify([]string{key}, h, body, 0), sundial.ErrNoSignature,
		"the legacy X-Acme-Signature alone is never accepted")
}

// TestSDKVerifiesAKeyOfAnotherForm: a key written into the database by hand
// signs with its string's bytes under both schemes; its standardSecret
// verifies both too.
func TestSDKVerifiesAKeyOfAnotherForm(t *testing.T) {
	t.Parallel()
	key := "hand-made-key"
	body := []byte(`{}`)
	h := http.Header{}
	signing.NewHeaders(signing.DefaultHeaderPrefix).SetScheme(h, signing.SchemeBoth, "id", []string{key}, time.Now().Unix(), body)
	for _, scheme := range []string{"Sundial", "webhook"} {
		only := h.Clone()
		for k := range only {
			if !hasPrefixFold(k, scheme) {
				delete(only, k)
			}
		}
		require.NoError(t, sundial.Verify([]string{key}, only, body, 0), scheme)
		require.NoError(t, sundial.Verify([]string{signing.StandardSecret(key)}, only, body, 0), scheme)
	}
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && http.CanonicalHeaderKey(s[:len(prefix)]) == http.CanonicalHeaderKey(prefix)
}

package app_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSignatureSchemeIsSundialUntilChanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, "sundial", b.do(http.MethodGet, "/v1/project", nil).project(t).SignatureScheme)
	for _, scheme := range []string{"standard", "both", "sundial"} {
		p := b.patchProject(`{"signatureScheme":"` + scheme + `"}`).project(t)
		require.Equal(t, scheme, p.SignatureScheme)
		require.Equal(t, scheme, b.do(http.MethodGet, "/v1/project", nil).project(t).SignatureScheme)
	}
	// Changing another setting keeps the scheme.
	b.patchProject(`{"signatureScheme":"both"}`).project(t)
	require.Equal(t, "both", b.patchProject(`{"asyncTimeoutSecs":60}`).project(t).SignatureScheme)
}

func TestSignatureSchemeRefusesOtherValues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, body := range []string{
		`{"signatureScheme":"Standard"}`,
		`{"signatureScheme":"svix"}`,
		`{"signatureScheme":""}`,
		`{"signatureScheme":" both"}`,
		`{"signatureScheme":null}`,
		`{"signatureScheme":1}`,
	} {
		b.patchProject(body).requireError(t, http.StatusBadRequest, "invalid_request", "signatureScheme")
	}
	require.Equal(t, "sundial", b.do(http.MethodGet, "/v1/project", nil).project(t).SignatureScheme)
}

func TestSigningKeysShowTheirStandardSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keys := b.signingKeys()
	require.Len(t, keys, 1)
	k := keys[0]
	secret, ok := strings.CutPrefix(k.StandardSecret, "whsec_")
	require.True(t, ok, k.StandardSecret)
	raw, err := base64.StdEncoding.DecodeString(secret)
	require.NoError(t, err)
	require.Len(t, raw, 32, "the key's random bytes")
	random, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(k.Key, "sdsig_"))
	require.NoError(t, err)
	require.Equal(t, random, raw)
}

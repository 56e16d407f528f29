package cli_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/cli"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func newKey(t *testing.T, id string) string {
	t.Helper()
	raw := make([]byte, secretbox.KeyBytes)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	return id + ":" + base64.StdEncoding.EncodeToString(raw)
}

// The rotation's middle step as an operator runs it: with the new key
// first, reseal-secrets moves every value to it, after which the old key
// can go; run with keys that open nothing, it fails naming the key id the
// values need, and shows no secret.
func TestResealSecretsMovesEveryValueToTheFirstKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.run("admin", "create-project", "--name", "Acme", "--domain", "hooks.example.com", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var creds app.Credentials
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &creds))

	next := newKey(t, "next")
	r = b.runWithKeys(next+","+secrettest.Keys, "admin", "reseal-secrets")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	// The project's row (async secret) and its signing key.
	require.Equal(t, "secrets: 2 sealed with the first key, 0 changed meanwhile (already sealed), 0 failed\n", r.stdout)

	r = b.runWithKeys(next, "admin", "create-project", "--name", "Second", "--domain", "hooks.example.com")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = b.runWithKeys(next, "admin", "reseal-secrets")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "secrets: 0 sealed", "the old key is no longer needed")

	r = b.runWithKeys(newKey(t, "wrong"), "admin", "reseal-secrets")
	require.Equal(t, cli.ExitError, r.code)
	require.Contains(t, r.stderr, `key "next"`)
	require.Contains(t, r.stderr, "SUNDIAL_SECRET_KEYS")
	require.NotContains(t, r.stderr, creds.SigningKey)
	require.NotContains(t, r.stderr, next[len("next:"):])
}

package browser

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// apiKeyRow is the row of the API key named name on the keys page.
func apiKeyRow(name string) string {
	return `//h1[normalize-space()="API keys"]/following::table[1]//tr[td[1][normalize-space()="` + name + `"]]`
}

// TestKeys covers the keys page; the subtests share a gateway, each in its
// own tab.
func TestKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	t.Run("api-key-shown-once-then-revoked", func(t *testing.T) {
		t.Parallel()
		apiKeyShownOnceThenRevoked(t, b)
	})
	t.Run("rotate-signing-key", func(t *testing.T) {
		t.Parallel()
		rotateSigningKey(t, b)
	})
}

// apiKeyShownOnceThenRevoked: the new key's value is on the page that
// created it and nowhere after; it works on the API until it is revoked
// from its row.
func apiKeyShownOnceThenRevoked(t *testing.T, b *bundle) {
	tb := signedIn(t, b)
	keys := b.overviewPath() + "/keys"

	tb.open(keys)
	tb.at("keys", keys, "#key-name")
	tb.typeInto("#key-name", "made in a browser")
	tb.click(`form[action$="/keys/api"] button[type=submit]`)
	tb.at("key-created", keys+"/api", `[role=status] code.secret`)
	plain := tb.text(`[role=status] code.secret`)
	require.NotEmpty(t, plain)
	api := b.api()
	api.APIKey = plain
	resp, raw := api.Do(t, http.MethodGet, "/v1/hooks", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the new key on the API: %s", raw)

	// Shown once: the keys page shows its row, never its value again.
	tb.open(keys)
	tb.at("keys-after-create", keys, "#key-name")
	require.False(t, eval[bool](tb, `document.querySelector("code.secret") !== null`))
	require.NotContains(t, eval[string](tb, `document.documentElement.outerHTML`), plain)
	require.Equal(t, "—", tb.textXPath(apiKeyRow("made in a browser")+"/td[5]"))

	tb.clickXPath(apiKeyRow("made in a browser") + `//button[normalize-space()="Revoke"]`)
	tb.waitPath(keys)
	tb.waitNoXPath(apiKeyRow("made in a browser") + `//button`)
	tb.shot("key-revoked")
	require.NotEqual(t, "—", tb.textXPath(apiKeyRow("made in a browser")+"/td[5]"))
	resp, raw = api.Do(t, http.MethodGet, "/v1/hooks", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the revoked key on the API: %s", raw)
}

// rotateSigningKey: the active key becomes retiring and a new one is
// active.
func rotateSigningKey(t *testing.T, b *bundle) {
	tb := signedIn(t, b)
	keys := b.overviewPath() + "/keys"

	tb.open(keys)
	tb.at("keys", keys, "#grace")
	signingRows := `//h1[normalize-space()="Signing keys"]/following::table[1]/tbody/tr`
	before := tb.textXPath(signingRows + `[td[2][normalize-space()="active"]]/td[1]`)

	tb.typeInto("#grace", "2")
	tb.click(`form[action$="/keys/signing/rotate"] button[type=submit]`)
	tb.waitPath(keys)
	tb.waitXPath(signingRows + `[td[2][normalize-space()="retiring"]]`)
	tb.shot("rotated")
	require.Equal(t, before, tb.textXPath(signingRows+`[td[2][normalize-space()="retiring"]]/td[1]`))
	after := tb.textXPath(signingRows + `[td[2][normalize-space()="active"]]/td[1]`)
	require.NotEqual(t, before, after)
}

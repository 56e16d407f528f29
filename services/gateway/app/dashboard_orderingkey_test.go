package app_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/account"
)

// TestDashboardSettingsOrderingOnFailure: the settings page shows the
// project's orderingOnFailure and saves it as PATCH /v1/project does; a
// word the API refuses is named next to its field.
func TestDashboardSettingsOrderingOnFailure(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	br := d.signedIn(account.Member)
	settings := d.overviewPath() + "/settings"

	p := br.get(settings)
	require.Equal(t, http.StatusOK, p.status)
	require.Regexp(t, `(?s)name="orderingOnFailure">\s*<option value="continue" selected>continue</option><option value="hold">hold</option>`, p.body)

	p = br.post(settings, url.Values{"orderingOnFailure": {"hold"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "hold", d.do(http.MethodGet, "/v1/project", nil).project(t).OrderingOnFailure)
	require.Contains(t, br.get(settings).body, `<option value="hold" selected>hold</option>`)

	p = br.post(settings, url.Values{"orderingOnFailure": {"pause"}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, html.UnescapeString(p.body), `must be "continue" or "hold"`)
}

// TestDashboardHeldOrderingKeys: the page lists the held keys with their
// failed hook; a member resumes one, which frees it; a viewer sees no
// button and is refused; a key that is not held is said so.
func TestDashboardHeldOrderingKeys(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	d.holdProject()
	past := d.dbNow().Add(-time.Minute)
	failed := d.keyedHook("account/42", past)
	next := d.keyedHook("account/42", past.Add(time.Second))
	d.failForGood(failed.ID)
	d.waitBehind(next.ID)
	page := d.overviewPath() + "/ordering-keys"

	vb := d.signedIn(account.Viewer)
	p := vb.get(page)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "<code>account/42</code>")
	require.Contains(t, p.body, d.hooksPath("/"+failed.ID))
	require.Contains(t, p.body, "this project <strong>holds</strong>")
	require.NotContains(t, p.body, ">Resume</button>")
	require.Equal(t, http.StatusForbidden, vb.do(http.MethodPost, page+"/resume", url.Values{"csrf": {vb.csrf()}, "key": {"account/42"}}).status)
	require.True(t, d.getOrderingKey("account/42").orderingKey(t).Held)
	require.Contains(t, vb.get(d.hooksPath("/"+failed.ID)).body, `<code id="hook-ordering-key">account/42</code>`, "the hook shows its key")

	// The held key's row, and the hook's page, link to the list of the
	// key's hooks, which shows them and no other, and keeps the key in its
	// form.
	other := d.keyedHook("account/7", past)
	listLink := d.hooksPath("?orderingKey=account%2f42")
	require.Contains(t, p.body, `<a class="key-hooks" href="`+listLink+`">hooks of this key</a>`)
	require.Contains(t, vb.get(d.hooksPath("/"+failed.ID)).body, `<a id="hook-ordering-key-hooks" href="`+listLink+`">hooks of this key</a>`)
	listed := vb.get(listLink)
	require.Equal(t, http.StatusOK, listed.status, listed.body)
	require.Contains(t, listed.body, failed.ID)
	require.Contains(t, listed.body, next.ID)
	require.NotContains(t, listed.body, other.ID)
	require.Contains(t, listed.body, "2 hooks match.")
	require.Contains(t, listed.body, `name="orderingKey" type="text" placeholder="account:42" value="account/42"`)
	failedOnly := vb.get(listLink + "&status=failed")
	require.Contains(t, failedOnly.body, failed.ID)
	require.NotContains(t, failedOnly.body, next.ID)
	bad := vb.get(d.hooksPath("?orderingKey=" + strings.Repeat("k", 256)))
	require.Equal(t, http.StatusBadRequest, bad.status)
	require.Contains(t, bad.body, "<code>orderingKey</code>: must be 1 to 255 printable ASCII characters")

	mb := d.signedIn(account.Member)
	token := mb.csrf()
	require.Contains(t, mb.get(page).body, ">Resume</button>")
	p = mb.do(http.MethodPost, page+"/resume", url.Values{"csrf": {token}, "key": {"account/42"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.False(t, d.getOrderingKey("account/42").orderingKey(t).Held)
	require.False(t, d.storedHook(next.ID).RunAt.After(d.dbNow()), "the key's next hook is due")
	p = mb.get(p.header.Get("Location"))
	require.Contains(t, p.body, "Resumed <code>account/42</code>")
	require.Contains(t, p.body, "No ordering key is held.")

	p = mb.do(http.MethodPost, page+"/resume", url.Values{"csrf": {token}, "key": {"account/42"}})
	require.Equal(t, http.StatusConflict, p.status)
	require.Contains(t, p.body, "not held")
	require.Equal(t, http.StatusNotFound, mb.do(http.MethodPost, page+"/resume", url.Values{"csrf": {token}, "key": {"nobody"}}).status)
	require.Equal(t, http.StatusBadRequest, mb.do(http.MethodPost, page+"/resume", url.Values{"csrf": {token}}).status)
}

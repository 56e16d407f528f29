package browser

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gateway "github.com/sundial-run/sundial/services/gateway/app"
)

// TestProjectPages covers the sequences, channels, settings and listeners
// pages; the subtests share the services, each in its own tab.
func TestProjectPages(t *testing.T) {
	t.Parallel()
	b := setup(t, options{delivery: true, notifier: true})
	t.Run("sequence-preview-pause-resume-runs", func(t *testing.T) {
		t.Parallel()
		sequencePauseResumeRuns(t, b)
	})
	t.Run("channel-health-send-test", func(t *testing.T) {
		t.Parallel()
		channelSendTest(t, b)
	})
	t.Run("settings-rename", func(t *testing.T) {
		t.Parallel()
		settingsRename(t, b)
	})
	t.Run("settings-viewer-refused", func(t *testing.T) {
		t.Parallel()
		settingsViewerRefused(t, b)
	})
	t.Run("listeners-none", func(t *testing.T) {
		t.Parallel()
		tb := signedIn(t, b)
		listeners := b.overviewPath() + "/listeners"
		tb.open(listeners)
		tb.at("listeners", listeners, "main h1")
		require.Equal(t, "Listeners", tb.text("main h1"))
		require.Contains(t, tb.text("main .card"), "No listener: the project's hooks go to its domain.")
		require.Equal(t, "No listener has connected recently.", tb.text("main table tbody tr td"))
	})
}

// created is the id of what a POST to the API created.
func (b *bundle) created(t *testing.T, path string, body map[string]any) string {
	t.Helper()
	resp, raw := b.api().Do(t, http.MethodPost, path, body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "POST %s: %s", path, raw)
	var out struct{ Data struct{ ID string } }
	require.NoError(t, json.Unmarshal(raw, &out))
	require.NotEmpty(t, out.Data.ID)
	return out.Data.ID
}

// reloadUntil opens path again until the JavaScript expression cond is
// true (a page that shows what another service writes has no live update).
func (tb *tab) reloadUntil(path, cond string) {
	tb.t.Helper()
	var last string
	ok := assert.Eventually(tb.t, func() bool {
		ctx, cancel := context.WithTimeout(tb.ctx, actionTimeout)
		defer cancel()
		met := false
		err := chromedp.Do(ctx, chromedp.Navigate(tb.base+path))
		if err == nil {
			met, err = chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		}
		if err != nil {
			last = err.Error()
		}
		return err == nil && met
	}, 30*time.Second, 100*time.Millisecond)
	if !ok {
		require.FailNow(tb.t, "never "+cond, "at %s; last error: %s", path, last)
	}
}

// submitted clicks a form's button and waits until the page the post
// answers is loaded, when that page has the address of the page posted
// from (a redirect back): a marker on the old document tells them apart.
func (tb *tab) submitted(sel string) {
	tb.t.Helper()
	eval[bool](tb, `(() => { window.sundialOldPage = true; return true })()`)
	tb.click(sel)
	var last string
	ok := assert.Eventually(tb.t, func() bool {
		ctx, cancel := context.WithTimeout(tb.ctx, actionTimeout)
		defer cancel()
		loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sundialOldPage === undefined && document.readyState === "complete"`))
		if err != nil {
			last = err.Error()
		}
		return err == nil && loaded
	}, actionTimeout, 20*time.Millisecond)
	if !ok {
		require.FailNow(tb.t, "the post of "+sel+" never answered", "last error: %s", last)
	}
}

// sequencePauseResumeRuns: a sequence made through the API is listed, its
// page previews its next runs, pauses and resumes it, and lists the run a
// trigger from the page made.
func sequencePauseResumeRuns(t *testing.T, b *bundle) {
	// Hourly from an hour away: no run but the triggered one.
	id := b.created(t, "/v1/sequences", map[string]any{
		"name": "nightly-export", "schedule": map[string]any{"every": "1h"},
		"startAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		"steps": []map[string]any{
			{"name": "extract", "path": "/browser/seq/extract", "data": map[string]any{}},
			{"name": "load", "path": "/browser/seq/load", "data": map[string]any{}, "dependsOn": []string{"extract"}},
		},
	})
	tb := signedIn(t, b)
	list := b.overviewPath() + "/sequences"
	page := list + "/" + id
	link := `a[href$="/sequences/` + id + `"]`
	tb.open(list)
	tb.at("sequences", list, link)
	require.Equal(t, "nightly-export", tb.text(link))
	tb.click(link)
	tb.at("sequence", page, "#sequence-status")
	require.Equal(t, "active", tb.text("#sequence-status"))
	require.Equal(t, "Every 1h", tb.text("#sequence-schedule"))
	require.Equal(t, 10, eval[int](tb, `document.querySelectorAll("#next-runs li:not(.muted)").length`), "the preview's default count")

	tb.click(`form[action$="/pause"] button`)
	tb.waitText("#sequence-status", "paused")
	tb.shot("paused")
	// The preview is the schedule's (as the API's); the page says that
	// paused, none of it runs.
	require.Contains(t, tb.text("#paused-note"), "none of these runs until the sequence is resumed")
	tb.click(`form[action$="/resume"] button`)
	tb.waitText("#sequence-status", "active")
	require.False(t, eval[bool](tb, `document.querySelector("#paused-note") !== null`))
	require.Equal(t, 10, eval[int](tb, `document.querySelectorAll("#next-runs li:not(.muted)").length`))

	// The scheduler runs the trigger; the run's row links its steps' hooks.
	tb.submitted(`form[action$="/trigger"] button`)
	tb.waitPath(page)
	tb.reloadUntil(page, `Array.from(document.querySelectorAll("table.runs tbody tr td:nth-child(3)")).some(td => td.textContent.trim() === "completed")`)
	tb.shot("run-completed")
	require.Equal(t, 2, eval[int](tb, `document.querySelectorAll("table.runs tbody tr td:nth-child(6) a[href*='/hooks/']").length`))
	require.Equal(t, 1, b.receiver.Received("/browser/seq/load"))
}

// channelSendTest: a channel's health is shown; its send test, sent by the
// notifier to a real receiver, is reported on the page and makes it ok.
func channelSendTest(t *testing.T, b *bundle) {
	b.created(t, "/v1/channels", map[string]any{
		"name": "ops webhook", "type": "webhook", "url": b.receiver.srv.URL() + "/browser/channel",
	})
	tb := signedIn(t, b)
	channels := b.overviewPath() + "/channels"
	card := `//h2[normalize-space()="ops webhook"]/parent::div`
	tb.open(channels)
	tb.at("channels", channels, "main h1")
	require.Contains(t, tb.textXPath(card), "Health: untested")
	require.Contains(t, tb.textXPath(card), "No sends yet.")

	tb.clickXPath(card + `//form[contains(@action, "/test")]/button`)
	tb.waitText(`[role=status]`, "Send test: sent")
	tb.shot("send-test")
	require.Equal(t, 1, b.receiver.Received("/browser/channel"))
	tb.open(channels)
	tb.at("channels-after-test", channels, "main h1")
	require.Contains(t, tb.textXPath(card), "Health: ok")
	require.Contains(t, tb.textXPath(card), "1 sent, 0 failed")
}

// projectName reads the project's name through the API.
func (b *bundle) projectName(t *testing.T) string {
	t.Helper()
	resp, raw := b.api().Do(t, http.MethodGet, "/v1/project", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/project: %s", raw)
	var out struct{ Data struct{ Name string } }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data.Name
}

const settingsSubmit = `form[action$="/settings"] button[type=submit]`

// settingsRename: the settings form renames the project.
func settingsRename(t *testing.T, b *bundle) {
	tb := signedIn(t, b)
	settings := b.overviewPath() + "/settings"
	tb.open(settings)
	tb.at("settings", settings, "#name")
	tb.typeInto("#name", "renamed in settings")
	tb.click(settingsSubmit)
	tb.waitText("details.switcher summary", "renamed in settings")
	tb.shot("renamed")
	require.Equal(t, "renamed in settings", eval[string](tb, `document.querySelector("#name").value`))
	require.Equal(t, "renamed in settings", b.projectName(t))
}

// settingsViewerRefused: a viewer sees the settings without a way to save
// them, and the form posted anyway (CSRF token and all) is refused.
func settingsViewerRefused(t *testing.T, b *bundle) {
	const email, password = "viewer@example.com", "viewer horse battery"
	_, err := gateway.CreateUser(b.ctx, b.db, gateway.NewUser{
		Email: email, ProjectID: b.creds.ProjectID, Role: "viewer", Password: password,
	})
	require.NoError(t, err)
	tb := openTab(t, b.base)
	settings := b.overviewPath() + "/settings"
	tb.open(settings)
	tb.at("signin", "/dashboard/signin", signinForm)
	tb.signIn(email, password)
	tb.at("settings-viewer", settings, "#name")
	require.False(t, eval[bool](tb, `document.querySelector(`+"`"+settingsSubmit+"`"+`) !== null`), "a save button for a viewer")
	require.True(t, eval[bool](tb, `Array.from(document.querySelectorAll("main fieldset")).every(f => f.disabled)`))
	require.Contains(t, tb.text("#read-only"), "Your role, viewer, reads the settings")

	// The form as a member would post it.
	eval[bool](tb, `(() => {
		const f = document.querySelector('form[action$="/settings"]');
		f.querySelectorAll("fieldset").forEach(s => { s.disabled = false });
		f.querySelector("#name").value = "renamed by a viewer";
		f.submit();
		return true })()`)
	tb.waitText("main h1", "403")
	tb.shot("viewer-refused")
	require.NotEqual(t, "renamed by a viewer", b.projectName(t))
}

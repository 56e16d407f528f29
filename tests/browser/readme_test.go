package browser

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// readmeWidth and readmeHeight are the viewport of the README's pictures:
// small files, the top of each page.
const readmeWidth, readmeHeight = 1280, 800

// readmeDir is where the README's pictures go: $SUNDIAL_SCREENSHOTS when
// set (docs/images, by `make screenshots`), else the screenshots folder,
// so that a plain run of the tests never rewrites committed files.
func readmeDir() string {
	if dir := os.Getenv("SUNDIAL_SCREENSHOTS"); dir != "" {
		return dir
	}
	return screenshotDir()
}

// readmeShot saves the viewport, readmeWidth by readmeHeight, as
// dashboard-NAME.png in readmeDir; with a selector, scrolled so that the
// bottom of its element is at the bottom of the picture.
func (tb *tab) readmeShot(name, bottom string) {
	tb.t.Helper()
	tb.do("viewport for "+name, chromedp.EmulateViewport(readmeWidth, readmeHeight))
	if bottom != "" {
		require.True(tb.t, eval[bool](tb, `(() => { const e = document.querySelector(`+"`"+bottom+"`"+`);
			if (!e) return false; e.scrollIntoView({block: "end"}); return true })()`), "no %s to scroll to", bottom)
	}
	tb.accessible(name)
	png := run(tb, "screenshot "+name, chromedp.CaptureScreenshot())
	dir := readmeDir()
	require.NoError(tb.t, os.MkdirAll(dir, 0o755))
	require.NoError(tb.t, os.WriteFile(filepath.Join(dir, "dashboard-"+name+".png"), png, 0o644))
}

// TestReadmeScreenshots makes the README's pictures of the dashboard from a
// demo state: hooks delivered, retried and failed to a real receiver. It
// checks what the pictures show, so it is a test like the others.
func TestReadmeScreenshots(t *testing.T) {
	t.Parallel()
	first := map[string]int{"/orders/shipped": http.StatusInternalServerError}
	failing := []string{"/invoices/overdue", "/trials/ending", "/reports/weekly"}
	for _, p := range failing {
		first[p] = http.StatusServiceUnavailable
	}
	b := setup(t, options{delivery: true, firstStatus: first})
	// No retries but the shipped order's one, 5 s later (the least): its
	// hook is delivered by its second attempt.
	resp, raw := b.api().Do(t, http.MethodPatch, "/v1/project", map[string]any{
		"name": "Acme shop", "retryPolicy": map[string]any{"minRetries": 0},
	})
	require.Equal(t, http.StatusOK, resp.StatusCode, "PATCH /v1/project: %s", raw)

	var delivered []string
	for i, p := range []string{"/orders/created", "/orders/paid", "/users/signed-up", "/carts/abandoned", "/orders/created", "/orders/paid", "/emails/digest", "/orders/created"} {
		delivered = append(delivered, b.schedule(t, map[string]any{"path": p, "postIn": "1s", "data": map[string]any{"order": 1000 + i}}).ID)
	}
	retried := b.schedule(t, map[string]any{"path": "/orders/shipped", "postIn": "1s",
		"data":          map[string]any{"order": 1042, "carrier": "DHL", "tracking": "JD014600006281"},
		"retryOverride": map[string]any{"minRetries": 1, "delaySecs": 5, "strategy": "fixed"}})
	var failed []string
	for i, p := range failing {
		failed = append(failed, b.schedule(t, map[string]any{"path": p, "postIn": "1s", "data": map[string]any{"n": i}}).ID)
	}
	b.schedule(t, map[string]any{"path": "/reminders/renewal", "postIn": "24h", "data": map[string]any{"plan": "pro"}})
	for _, id := range delivered {
		b.waitStatus(t, id, "completed")
	}
	require.Equal(t, 2, b.waitStatus(t, retried.ID, "completed").Attempts)
	for _, id := range failed {
		b.waitStatus(t, id, "failed")
	}

	tb := openTab(t, b.base)
	tb.open("/dashboard/signin")
	tb.at("signin", "/dashboard/signin", signinForm)
	tb.readmeShot("signin", "")
	tb.signIn(b.email, b.password)
	tb.at("overview-24h", b.overviewPath(), "#total-deliveries")
	// The last hour: a step a minute, the narrowest.
	tb.open(b.overviewPath() + "?range=1h")
	tb.at("overview", b.overviewPath(), "#total-deliveries")
	deliveries, err := strconv.Atoi(tb.text("#total-deliveries"))
	require.NoError(t, err)
	// Every attempt: one per hook, and the shipped order's retry.
	require.Equal(t, len(delivered)+len(failed)+2, deliveries)
	tb.readmeShot("overview", "")

	tb.open(b.hookPath(retried.ID))
	tb.at("hook", b.hookPath(retried.ID), "#hook-status")
	require.Equal(t, "completed", tb.text("#hook-status"))
	require.Equal(t, []string{"500", "200"}, eval[[]string](tb, `Array.from(document.querySelectorAll("`+attemptRows+` td:nth-child(5)"), td => td.textContent.trim())`))
	// Down to its attempts: the 500, then the 200.
	tb.readmeShot("hook", "table.attempts")

	// The create form, filled as for a reminder at 09:00 in Paris.
	form := b.overviewPath() + "/hooks/new"
	tb.open(form)
	tb.at("create-hook", form, "#path")
	tb.typeInto("#path", "/reminders/renewal")
	tb.typeInto("#data", `{"plan": "pro", "customer": 1042}`)
	tb.click("#when-postAtLocal")
	tb.typeInto("#postAtLocal", "2030-12-01T09:00:00")
	tb.typeInto("#timezone", "Europe/Paris")
	// From the top, as it opens: typing scrolled to the field.
	eval[bool](tb, `(() => { document.activeElement.blur(); window.scrollTo(0, 0); return true })()`)
	tb.readmeShot("create-hook", "")
	t.Logf("README pictures in %s", readmeDir())
}

package browser

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/internal/apiclient"
)

// hook is the API's view of a hook, as far as these tests look at it.
type hook struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

// schedule creates a hook through the API.
func (b *bundle) schedule(t *testing.T, req map[string]any) hook {
	t.Helper()
	h := apiclient.Schedule[hook](t, b.api(), req)
	require.NotEmpty(t, h.ID)
	return h
}

// waitStatus waits until the API shows the hook with the status.
func (b *bundle) waitStatus(t *testing.T, id, status string) hook {
	t.Helper()
	var last hook
	require.Eventually(t, func() bool {
		resp, raw := b.api().Do(t, http.MethodGet, "/v1/hooks/"+id, nil)
		var out struct{ Data hook }
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil {
			return false
		}
		last = out.Data
		return last.Status == status
	}, 30*time.Second, 50*time.Millisecond, "hook %s never became %s", id, status)
	return last
}

func (b *bundle) hookPath(id string) string { return b.overviewPath() + "/hooks/" + id }

// attemptRows are the rows of the hook page's attempts table.
const attemptRows = `table.attempts tbody tr`

// TestHooks covers the hooks pages with deliveries to a real receiver. The
// hooks are all made first, so that their deliveries overlap; the subtests
// share the services, each in its own tab.
func TestHooks(t *testing.T) {
	t.Parallel()
	b := setup(t, options{delivery: true, firstStatus: map[string]int{"/browser/retried": http.StatusInternalServerError}})
	// No retries: a first failure is final.
	resp, raw := b.api().Do(t, http.MethodPatch, "/v1/project", map[string]any{"retryPolicy": map[string]any{"minRetries": 0}})
	require.Equal(t, http.StatusOK, resp.StatusCode, "PATCH /v1/project: %s", raw)

	delivered := b.schedule(t, map[string]any{"path": "/browser/delivered", "postIn": "1s", "data": map[string]any{"seen": "in a browser"}})
	failed := b.schedule(t, map[string]any{"path": "/browser/retried", "postIn": "1s", "data": map[string]any{"n": 1}})
	alerted := b.schedule(t, map[string]any{"path": "/browser/alerted", "postIn": "1h", "data": map[string]any{}})
	// Three hooks in a range of postAt two hours away, one outside it.
	start := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	var cancelled []string
	for i := range 3 {
		cancelled = append(cancelled, b.schedule(t, map[string]any{"path": fmt.Sprintf("/browser/bulk/%d", i),
			"postAt": start.Add(time.Duration(i) * time.Minute).Format(time.RFC3339), "data": map[string]any{"i": i}}).ID)
	}
	kept := b.schedule(t, map[string]any{"path": "/browser/kept",
		"postAt": start.Add(time.Hour).Format(time.RFC3339), "data": map[string]any{"kept": true}})

	// From the hooks list to a delivered hook's page: completed, with its
	// one successful attempt.
	t.Run("delivered-hook-and-attempt", func(t *testing.T) {
		t.Parallel()
		b.waitStatus(t, delivered.ID, "completed")
		tb := signedIn(t, b)
		link := `a[href$="/hooks/` + delivered.ID + `"]`
		tb.open(b.overviewPath() + "/hooks")
		tb.at("hooks", b.overviewPath()+"/hooks", link)
		tb.click(link)
		tb.at("hook", b.hookPath(delivered.ID), "#hook-status")
		// The attempt's headers, in a closed disclosure under the
		// attempts: the request as the dispatcher sent it (the async URL's
		// token redacted), and the receiver's answer.
		details := `details#attempt-1-headers`
		require.False(t, eval[bool](tb, `document.querySelector("`+details+`").open`))
		tb.click(details + ` summary`)
		require.True(t, eval[bool](tb, `document.querySelector("`+details+`").open`))
		row := func(side, name string) string {
			return eval[string](tb, `(() => { const r = Array.from(document.querySelectorAll("`+details+` table.`+side+
				` tr")).find(r => r.querySelector("th") && r.querySelector("th").textContent === "`+name+`"); return r ? r.querySelector("td").textContent : ""; })()`)
		}
		require.Equal(t, "application/json", row("request-headers", "Content-Type"))
		require.Regexp(t, `/v1/async/`+delivered.ID+`/\d+/\[redacted\]/ack$`, row("request-headers", "Sundial-Ack-URL"))
		require.NotEmpty(t, row("response-headers", "Date"))
		tb.accessible("hook")
		require.Equal(t, "completed", tb.text("#hook-status"))
		// Times in the viewer's zone (the browser's, UTC here unless TZ
		// says otherwise), the server's UTC text on hover.
		require.True(t, eval[bool](tb, `(() => { const ts = Array.from(document.querySelectorAll("time[datetime]")); return ts.length >= 3 && ts.every(t => t.hasAttribute("data-local") && t.title.endsWith(" (UTC)")); })()`),
			"every time is shown in the viewer's zone with UTC on hover")
		require.Equal(t, "/browser/delivered", tb.text("#hook-path"))
		require.Contains(t, tb.text("#hook-data"), "in a browser")
		require.Equal(t, 1, eval[int](tb, `document.querySelectorAll("`+attemptRows+`").length`))
		require.Equal(t, "1", tb.text(attemptRows+` td:nth-child(1)`))
		require.Equal(t, "success", tb.text(attemptRows+` td:nth-child(4)`))
		require.Equal(t, "200", tb.text(attemptRows+` td:nth-child(5)`))

		// The search by id, from the hooks page, lands on the same hook.
		tb.open(b.overviewPath() + "/hooks")
		tb.at("hooks-find", b.overviewPath()+"/hooks", "#find-id")
		tb.accessible("hooks")
		tb.typeInto("#find-id", delivered.ID)
		tb.click(`form.find button[type=submit]`)
		tb.at("found", b.hookPath(delivered.ID), "#hook-status")

		// The overview counts it (the figures are written with the result).
		tb.open(b.overviewPath() + "?range=1h")
		tb.at("overview-delivered", b.overviewPath(), "#total-deliveries")
		n, err := strconv.Atoi(tb.text("#total-deliveries"))
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, 1)
	})

	// A hook the receiver failed is retried from its page, and delivered.
	t.Run("retry-failed-hook", func(t *testing.T) {
		t.Parallel()
		b.waitStatus(t, failed.ID, "failed")
		tb := signedIn(t, b)
		tb.open(b.hookPath(failed.ID))
		tb.at("failed", b.hookPath(failed.ID), "#hook-status")
		require.Equal(t, "failed", tb.text("#hook-status"))
		require.Equal(t, "500", tb.text(attemptRows+` td:nth-child(5)`))
		// Only what a failed hook allows is enabled.
		require.Equal(t, map[string]bool{"retry": false, "replay": true, "cancel": true}, actionsDisabled(tb))
		tb.click(`form[action$="/retry"] button`)
		tb.at("retry-done", b.hookPath(failed.ID), "#done")
		require.Contains(t, tb.text("#done"), "1 hook(s) affected")

		require.Equal(t, 2, b.waitStatus(t, failed.ID, "completed").Attempts)
		tb.open(b.hookPath(failed.ID))
		tb.at("retried", b.hookPath(failed.ID), "#hook-status")
		require.Equal(t, "completed", tb.text("#hook-status"))
		require.Equal(t, 2, eval[int](tb, `document.querySelectorAll("`+attemptRows+`").length`))
		require.Equal(t, map[string]bool{"retry": true, "replay": false, "cancel": true}, actionsDisabled(tb))
		require.Equal(t, 2, b.receiver.Received("/browser/retried"))
	})

	// The bulk form first shows how many hooks a cancel takes, then cancels
	// exactly those.
	t.Run("bulk-cancel-count-confirmed", func(t *testing.T) {
		t.Parallel()
		tb := signedIn(t, b)
		hooks := b.overviewPath() + "/hooks"
		tb.open(hooks)
		tb.at("hooks", hooks, "#startTime")
		tb.typeInto("#startTime", start.Format(time.RFC3339))
		tb.typeInto("#endTime", start.Add(10*time.Minute).Format(time.RFC3339))
		tb.click(`form.bulk button[formaction$="/bulk/cancel"]`)
		tb.at("bulk-count", b.overviewPath()+"/bulk/cancel", "#bulk-count")
		require.Equal(t, "3", tb.text("#bulk-count strong"))
		tb.click(`form[action$="/bulk/cancel"] button[type=submit]`)
		tb.at("bulk-done", b.overviewPath()+"/bulk/cancel", "#bulk-result")
		require.Contains(t, tb.text("#bulk-result"), "3 hook(s) affected")

		for _, id := range cancelled {
			resp, raw := b.api().Do(t, http.MethodGet, "/v1/hooks/"+id, nil)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, "cancelled hook %s: %s", id, raw)
		}
		resp, raw := b.api().Do(t, http.MethodGet, "/v1/hooks/"+kept.ID, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "the hook outside the range: %s", raw)
	})

	// A hook alert's link (the notifier's /dashboard/p/{project}/hooks/{id}),
	// opened while signed out, lands on the hook's page after the sign-in.
	t.Run("hook-alert-link", func(t *testing.T) {
		t.Parallel()
		tb := openTab(t, b.base)
		tb.open(b.hookPath(alerted.ID))
		tb.at("signin", "/dashboard/signin", signinForm)
		tb.signIn(b.email, b.password)
		tb.at("hook", b.hookPath(alerted.ID), "#hook-status")
		require.Equal(t, "pending", tb.text("#hook-status"))
	})
}

// actionsDisabled tells, per action of the hook page, whether its button
// is disabled.
func actionsDisabled(tb *tab) map[string]bool {
	tb.t.Helper()
	return eval[map[string]bool](tb, `Object.fromEntries(["retry", "replay", "cancel"].map(a =>
		[a, document.querySelector('form[action$="/' + a + '"] button').disabled]))`)
}

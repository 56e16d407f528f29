package app_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/deliverystats"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// figure counts deliveries of a minute's shard as the scheduler does: in
// the minute's step of every length (deliverystats.Steps).
func (d dashBundle) figure(project uuid.UUID, minute time.Time, shard int16, succeeded, failed, async int32, buckets []int64) {
	d.t.Helper()
	for _, step := range deliverystats.Steps {
		require.NoError(d.t, d.tq.InsertDeliveryMinute(d.ctx, storetest.InsertDeliveryMinuteParams{
			ProjectID: project, StepSeconds: int32(step / time.Second), Minute: minute.Truncate(step), Shard: shard,
			Succeeded: succeeded, Failed: failed, Async: async, LatenessBuckets: buckets,
		}))
	}
}

func TestDashboardOverviewSumsTheFigures(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	minute := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	// One minute over two shards: 90 first attempts under 20 ms (bucket 4),
	// 10 under 1 s (bucket 9, a shorter array on the other shard).
	d.figure(d.project, minute, 0, 3, 1, 2, []int64{0, 0, 0, 0, 90})
	d.figure(d.project, minute, 3, 5, 1, 0, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0})
	// Two days ago: in 7d only. Another project's: never.
	d.figure(d.project, minute.Add(-48*time.Hour), 0, 1000, 0, 0, []int64{})
	d.figure(uuid.MustParse(other.ProjectID), minute, 0, 7, 7, 7, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 500})

	br := d.signedIn(account.Viewer)
	p := br.get(d.overviewPath())
	require.Equal(t, http.StatusOK, p.status)
	require.NotEmpty(t, p.header.Get("Content-Security-Policy"))
	require.Contains(t, p.body, `<td id="total-deliveries">12</td>`)
	require.Contains(t, p.body, `<td id="success-rate">80.00 %</td>`)
	require.Contains(t, p.body, `<td id="lateness-p50">≤ 20ms</td>`)
	require.Contains(t, p.body, `<td id="lateness-p99">≤ 1s</td>`)
	require.Contains(t, p.body, "<svg")
	require.Contains(t, p.body, "<details>")
	require.Contains(t, p.body, "8 succeeded, 2 failed, 2 async") // the step's bar title
	require.Contains(t, p.body, "hooks created")                  // quota use

	p = br.get(d.overviewPath() + "?range=7d")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<td id="total-deliveries">1012</td>`)
	require.Contains(t, p.body, `<td id="success-rate">99.80 %</td>`)

	p = br.get(d.overviewPath() + "?range=1h")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<td id="total-deliveries">12</td>`)

	p = br.get(d.overviewPath() + "?range=1y")
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "range")
}

// evilHook is a failed hook whose path, data, failure error and attempt
// carry markup.
func (d dashBundle) evilHook(postAt time.Time) string {
	d.t.Helper()
	h, err := d.tq.InsertHookForBulkTest(d.ctx, storetest.InsertHookForBulkTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: d.project, Path: `/x<script>alert(1)</script>`,
		Domain: "hooks.example.com", Data: json.RawMessage(`{"html":"<b>bold</b>","n":1}`), PostAt: postAt,
		Status: "failed", Attempts: 1, TryAt: &postAt, FailureError: ptr(`HTTP 500 <i>oops</i>`),
	})
	require.NoError(d.t, err)
	require.NoError(d.t, d.tq.InsertAttemptForDashboardTest(d.ctx, storetest.InsertAttemptForDashboardTestParams{
		HookID: h.ID, Attempt: 1, StatusCode: ptr(int32(500)), Error: ptr(`HTTP 500 <i>oops</i>`),
		ResponseExcerpt: ptr(`<html><script>x()</script></html>`),
	}))
	return h.ID.String()
}

func (d dashBundle) hooksPath(rest string) string { return d.overviewPath() + "/hooks" + rest }

func TestDashboardHooksListAndHookPage(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	created := d.post(`{"path":"/orders?id=7","postIn":"1h","data":{"order":7}}`)
	require.Equal(t, http.StatusCreated, created.status, string(created.body))
	evil := d.evilHook(bulkDay)
	var latest string
	for i := range 3 {
		latest = d.stateHook(d.creds.ProjectID, "completed", bulkDay.Add(time.Duration(i)*time.Hour))
	}
	br := d.signedIn(account.Viewer)

	p := br.get(d.hooksPath(""))
	require.Equal(t, http.StatusOK, p.status)
	require.NotEmpty(t, p.header.Get("Content-Security-Policy"))
	require.Contains(t, p.body, "5 hooks match")
	require.Contains(t, p.body, `/orders?id=7`)
	require.Contains(t, p.body, d.hooksPath("/"+evil))
	require.NotContains(t, p.body, "<script>alert")
	require.Contains(t, p.body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.NotContains(t, p.body, "Bulk retry") // a viewer sees no actions
	// Quick filters, each a query of the API's filters that the page takes.
	presets := regexp.MustCompile(`<a href="([^"]+)">(Created in the last hour|Failed today|Due within the hour|Waiting to retry)</a>`).FindAllStringSubmatch(p.body, -1)
	require.Len(t, presets, 4, p.body)
	for _, m := range presets {
		require.Equal(t, http.StatusOK, br.get(html.UnescapeString(m[1])).status, m[2])
	}
	// The search by id goes to the hook's page, and so does the search by
	// key; what names no hook is a 404 that says so.
	found := br.do(http.MethodGet, d.hooksPath("?id=+"+latest+"+"), nil)
	require.Equal(t, http.StatusSeeOther, found.status)
	require.Equal(t, d.hooksPath("/"+latest), found.header.Get("Location"))
	keyed := d.post(`{"path":"/keyed","postIn":"1h","data":{},"key":"order 7/reminder","tags":["campaign:spring"]}`)
	found = br.do(http.MethodGet, d.hooksPath("?id="+url.QueryEscape("order 7/reminder")), nil)
	require.Equal(t, http.StatusSeeOther, found.status)
	require.Equal(t, d.hooksPath("/"+keyed.hook(t).ID), found.header.Get("Location"))
	// The hook's page shows its key, and its tags as links to the list of
	// the hooks of each.
	p = br.get(d.hooksPath("/" + keyed.hook(t).ID))
	require.Contains(t, p.body, `<code id="hook-key">order 7/reminder</code>`)
	tagLink := regexp.MustCompile(`<a href="([^"]+)"><code>campaign:spring</code></a>`).FindStringSubmatch(p.body)
	require.NotNil(t, tagLink, p.body)
	tagged := br.get(html.UnescapeString(tagLink[1]))
	require.Equal(t, http.StatusOK, tagged.status, tagged.body)
	require.Contains(t, tagged.body, `<code>/keyed</code>`)
	require.NotContains(t, tagged.body, `<code>/orders?id=7</code>`)
	require.Contains(t, tagged.body, `name="tag" type="text" placeholder="campaign:spring" value="campaign:spring"`, "the filter form keeps the tag")
	for _, missing := range []string{"order-7", "caf\u00e9"} {
		notFound := br.get(d.hooksPath("?id=" + url.QueryEscape(missing)))
		require.Equal(t, http.StatusNotFound, notFound.status)
		require.Contains(t, notFound.body, "No hook of this project has this id or key.")
	}

	// The API's filters, paged with the cursor; an empty field is no filter.
	p = br.get(d.hooksPath("?status=completed&sortBy=postAt&sortOrder=ASC&limit=2&postAtAfter=&createdAtBefore="))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "3 hooks match")
	next := regexp.MustCompile(`rel="next" href="([^"]+)"`).FindStringSubmatch(p.body)
	require.NotNil(t, next, p.body)
	p = br.get(html.UnescapeString(next[1]))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Equal(t, 1, strings.Count(p.body, `<span class="status status-completed">completed</span>`))
	require.NotContains(t, p.body, `rel="next"`)

	// A postAt window with the default sort is sorted by postAt: the hook
	// created last but due first comes last, newest postAt first.
	early := d.stateHook(d.creds.ProjectID, "completed", bulkDay.Add(-30*time.Minute))
	p = br.get(d.hooksPath("?" + url.Values{"postAtAfter": {bulkDay.Add(-time.Hour).Format(time.RFC3339)},
		"postAtBefore": {bulkDay.Add(3 * time.Hour).Format(time.RFC3339)}, "sortBy": {""}}.Encode()))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<option value="postAt" selected>`)
	require.Less(t, strings.Index(p.body, d.hooksPath("/"+latest)), strings.Index(p.body, d.hooksPath("/"+early)))

	p = br.get(d.hooksPath("?status=lost&limit=0"))
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "<code>status</code>")
	require.Contains(t, p.body, "<code>limit</code>")

	// The live tail: the page polls the fragment of the newest hooks.
	p = br.get(d.hooksPath("?tail=1&status=failed"))
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `hx-trigger="every 2s"`)
	require.Contains(t, p.body, `hx-get="`+d.hooksPath("/tail?status=failed")+`"`)
	p = br.get(d.hooksPath("/tail?status=failed"))
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, "<html")
	require.Contains(t, p.body, d.hooksPath("/"+evil))
	require.NotContains(t, p.body, "orders")

	// A hook: every field and attempt, markup shown as text.
	p = br.get(d.hooksPath("/" + evil))
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, "<script>")
	require.NotContains(t, p.body, "<i>oops")
	require.NotContains(t, p.body, "<b>bold")
	require.Contains(t, p.body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.Contains(t, p.body, "HTTP 500 &lt;i&gt;oops&lt;/i&gt;")
	require.Contains(t, p.body, "&lt;html&gt;&lt;script&gt;x()&lt;/script&gt;&lt;/html&gt;")
	require.Contains(t, p.body, "&#34;html&#34;: &#34;&lt;b&gt;bold&lt;/b&gt;&#34;") // pretty-printed
	require.Contains(t, p.body, "{\n  &#34;")
	require.Contains(t, p.body, "<td>500</td>")
	require.Contains(t, p.body, "0.250 s")
	require.NotContains(t, p.body, ">Retry</button>")

	// Another project's hook, an unknown one and a malformed id are 404.
	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	foreign := d.stateHook(other.ProjectID, "failed", bulkDay)
	for _, id := range []string{foreign, uuid.NewString(), "nope"} {
		require.Equal(t, http.StatusNotFound, br.get(d.hooksPath("/"+id)).status, id)
	}
	mb := d.signedIn(account.Member)
	p = mb.do(http.MethodPost, d.hooksPath("/"+foreign+"/retry"), url.Values{"csrf": {mb.csrf()}})
	require.Equal(t, http.StatusNotFound, p.status)
	require.Equal(t, "failed", d.storedHookIn(foreign).Status) // not this project's: untouched
}

// TestDashboardHookPageShowsTheAttemptsHeaders: under the attempts, one
// disclosure per attempt that recorded headers, the request's then the
// answer's, each value a row, markup shown as text, with the lines left
// out; an attempt without headers has none.
func TestDashboardHookPageShowsTheAttemptsHeaders(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	id := uuid.MustParse(d.stateHook(d.creds.ProjectID, "completed", bulkDay))
	for _, a := range []storetest.InsertAttemptWithHeadersForTestParams{
		{Attempt: 1},
		{Attempt: 2, RequestHeaders: json.RawMessage(`{"Content-Type": ["application/json"], "Authorization": ["[redacted]"]}`),
			ResponseHeaders: json.RawMessage(`{"X-Multi": ["one", "two"], "X-Evil": ["<script>x()</script>"]}`), ResponseHeadersOmitted: 3},
		{Attempt: 3, RequestHeaders: json.RawMessage(`{"Content-Type": ["application/json"]}`)},
	} {
		a.HookID = id
		require.NoError(t, d.tq.InsertAttemptWithHeadersForTest(d.ctx, a))
	}
	p := d.signedIn(account.Viewer).get(d.hooksPath("/" + id.String()))
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, `id="attempt-1-headers"`)
	require.Contains(t, p.body, `id="attempt-2-headers"`)
	require.Contains(t, p.body, `id="attempt-3-headers"`)
	require.Contains(t, p.body, `<th scope="row">Authorization</th><td><code>[redacted]</code></td>`)
	require.Contains(t, p.body, `<th scope="row">X-Multi</th><td><code>one</code></td></tr><tr><th scope="row">X-Multi</th><td><code>two</code></td>`)
	require.NotContains(t, p.body, "<script>x()")
	require.Contains(t, p.body, "&lt;script&gt;x()&lt;/script&gt;")
	require.Contains(t, p.body, "3 more line(s) left out.")
	require.Equal(t, 1, strings.Count(p.body, "No answer."), "attempt 3 had no answer's headers")
}

func (d dashBundle) storedHookIn(id string) storetest.Hook {
	d.t.Helper()
	h, err := d.tq.GetHookForBulkTest(d.ctx, uuid.MustParse(id))
	require.NoError(d.t, err)
	return h
}

func TestDashboardHookActions(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	failed := d.stateHook(d.creds.ProjectID, "failed", bulkDay)
	completed := d.stateHook(d.creds.ProjectID, "completed", bulkDay)
	pending := d.stateHook(d.creds.ProjectID, "pending", bulkDay.Add(time.Hour))

	vb := d.signedIn(account.Viewer)
	p := vb.get(d.hooksPath("/" + failed))
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, "</button> <span")
	token := vb.csrf()
	for _, path := range []string{"/" + failed + "/retry", "/" + completed + "/replay", "/" + pending + "/cancel"} {
		require.Equal(t, http.StatusForbidden, vb.do(http.MethodPost, d.hooksPath(path), url.Values{"csrf": {token}}).status, path)
	}
	for _, action := range []string{"retry", "replay", "cancel"} {
		form := url.Values{"csrf": {token}, "startTime": {bulkDay.Format(time.RFC3339)}, "endTime": {bulkDay.Add(24 * time.Hour).Format(time.RFC3339)}, "limit": {"10"}}
		require.Equal(t, http.StatusForbidden, vb.do(http.MethodPost, d.overviewPath()+"/bulk/"+action, form).status, action)
	}
	require.Equal(t, "failed", d.status(failed))
	require.Equal(t, "pending", d.status(pending))

	mb := d.signedIn(account.Member)
	token = mb.csrf()
	p = mb.get(d.hooksPath("/" + failed))
	require.Contains(t, p.body, ">Retry</button>")

	p = mb.do(http.MethodPost, d.hooksPath("/"+failed+"/retry"), url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "pending", d.status(failed))
	p = mb.get(p.header.Get("Location"))
	require.Contains(t, p.body, "retry: 1 hook(s) affected.")

	p = mb.do(http.MethodPost, d.hooksPath("/"+completed+"/replay"), url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, p.status)
	hooks, err := d.tq.ListProjectHooksForBulkTest(d.ctx, d.project)
	require.NoError(t, err)
	require.Len(t, hooks, 4) // the replay is a new hook

	p = mb.do(http.MethodPost, d.hooksPath("/"+pending+"/cancel"), url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "gone", d.status(pending))
	require.Equal(t, http.StatusOK, mb.get(p.header.Get("Location")).status)

	require.Equal(t, http.StatusNotFound, mb.do(http.MethodPost, d.hooksPath("/"+failed+"/explode"), url.Values{"csrf": {token}}).status)
	require.Equal(t, http.StatusForbidden, mb.do(http.MethodPost, d.hooksPath("/"+failed+"/retry"), url.Values{}).status) // no CSRF token
}

var bulkCount = regexp.MustCompile(`name="count" value="(\d+)"`)

func TestDashboardBulkConfirmsTheCount(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	var failed []string
	for i := range 3 {
		failed = append(failed, d.stateHook(d.creds.ProjectID, "failed", bulkDay.Add(time.Duration(i)*time.Hour)))
	}
	d.stateHook(d.creds.ProjectID, "failed", bulkDay.Add(48*time.Hour)) // outside the range
	d.stateHook(d.creds.ProjectID, "completed", bulkDay)                // not failed
	mb := d.signedIn(account.Member)
	token := mb.csrf()
	p := mb.get(d.hooksPath("?postAtAfter=" + url.QueryEscape(bulkDay.Format(time.RFC3339))))
	require.Contains(t, p.body, "Bulk retry")

	form := url.Values{"csrf": {token}, "startTime": {bulkDay.Format(time.RFC3339)},
		"endTime": {bulkDay.Add(24 * time.Hour).Format(time.RFC3339)}, "limit": {"1000"}}
	p = mb.do(http.MethodPost, d.overviewPath()+"/bulk/retry", form)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "This will retry <strong>3</strong> hook(s)")
	require.Equal(t, "3", bulkCount.FindStringSubmatch(p.body)[1])
	require.Contains(t, p.body, "The first 3 of them", "the dry run's sample")
	for _, id := range failed {
		require.Contains(t, p.body, "<code>"+id+"</code>")
		require.Equal(t, "failed", d.status(id)) // nothing happened yet
	}

	// One more hook fails meanwhile: the confirmation shows the new count.
	failed = append(failed, d.stateHook(d.creds.ProjectID, "failed", bulkDay.Add(5*time.Hour)))
	form.Set("confirm", "1")
	form.Set("count", "3")
	p = mb.do(http.MethodPost, d.overviewPath()+"/bulk/retry", form)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "changed meanwhile: it is now 4")
	require.Equal(t, "failed", d.status(failed[3]))

	form.Set("count", bulkCount.FindStringSubmatch(p.body)[1])
	p = mb.do(http.MethodPost, d.overviewPath()+"/bulk/retry", form)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "Done: 4 hook(s) affected.")
	for _, id := range failed {
		require.Equal(t, "pending", d.status(id))
	}

	bad := url.Values{"csrf": {token}, "startTime": {"yesterday"}, "endTime": {""}, "limit": {"5000"}}
	p = mb.do(http.MethodPost, d.overviewPath()+"/bulk/cancel", bad)
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "<code>startTime</code>")
	require.Contains(t, p.body, "<code>limit</code>")
	require.Equal(t, http.StatusNotFound, mb.do(http.MethodPost, d.overviewPath()+"/bulk/explode", form).status)
}

// TestDashboardHookPageShowsTheFailureClass: the hook's last failure class
// and each failed attempt's.
func TestDashboardHookPageShowsTheFailureClass(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	created := d.post(`{"path":"/gone","postIn":"1h","data":{}}`)
	require.Equal(t, http.StatusCreated, created.status, string(created.body))
	id := created.hook(t).ID
	require.NoError(t, d.tq.InsertFailedAttemptForTest(d.ctx, storetest.InsertFailedAttemptForTestParams{
		HookID: uuid.MustParse(id), StatusCode: ptr(int32(410)), Error: ptr("HTTP 410"), FailureClass: ptr("410"),
	}))
	p := d.signedIn(account.Viewer).get(d.hooksPath("/" + id))
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<code id="hook-failure-class">410</code>`)
	require.Contains(t, p.body, `<td class="failure-class">410</td>`)
}

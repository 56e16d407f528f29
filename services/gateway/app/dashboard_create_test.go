package app_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// createdHook follows the create form's redirect to the new hook's page
// and reads the hook through the API.
func (d dashBundle) createdHook(br *browser, p page) hookJSON {
	d.t.Helper()
	require.Equal(d.t, http.StatusSeeOther, p.status, p.body)
	loc := p.header.Get("Location")
	prefix := d.hooksPath("/")
	require.True(d.t, strings.HasPrefix(loc, prefix), loc)
	id, query, _ := strings.Cut(strings.TrimPrefix(loc, prefix), "?")
	require.Equal(d.t, "created=1", query)
	res := d.do(http.MethodGet, "/v1/hooks/"+id, nil)
	require.Equal(d.t, http.StatusOK, res.status, string(res.body))
	require.Equal(d.t, http.StatusOK, br.get(loc).status)
	return res.hook(d.t)
}

// requireFieldError fails unless the first problem shown after the form
// field named field starts with says.
func requireFieldError(t *testing.T, body, field, says string) {
	t.Helper()
	const alert = `<p class="error" role="alert">`
	i := strings.Index(body, `name="`+field+`"`)
	require.GreaterOrEqual(t, i, 0, "no field %s", field)
	j := strings.Index(body[i:], alert)
	require.GreaterOrEqual(t, j, 0, "no problem after the field %s", field)
	shown := body[i+j+len(alert):]
	shown = shown[:strings.Index(shown, "</p>")]
	require.True(t, strings.HasPrefix(shown, html.EscapeString(says)), "after %s: %s", field, shown)
}

// hookIDs are the project's hooks' ids.
func (d dashBundle) hookIDs() []string {
	d.t.Helper()
	hooks, err := d.tq.ListProjectHooksForBulkTest(d.ctx, d.project)
	require.NoError(d.t, err)
	ids := make([]string, len(hooks))
	for i, h := range hooks {
		ids[i] = h.ID.String()
	}
	return ids
}

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return at
}

// hookForm is a valid create form, due after postIn, with changes.
func hookForm(changes map[string]string) url.Values {
	form := url.Values{"path": {"/made/here"}, "data": {`{"order": 7}`}, "when": {"postIn"}, "postIn": {"1h"}}
	for k, v := range changes {
		form.Set(k, v)
	}
	return form
}

func TestDashboardCreateHook(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	member := d.signedIn(account.Member)
	form := d.hooksPath("/new")

	p := member.get(form)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `action="`+d.hooksPath("")+`"`)
	require.Contains(t, member.get(d.hooksPath("")).body, `href="`+form+`"`, "the list links the form")

	// Each way of saying when, as the API's.
	before := d.dbNow()
	h := d.createdHook(member, member.post(d.hooksPath(""), hookForm(nil)))
	require.Equal(t, "/made/here", h.Path)
	require.JSONEq(t, `{"order":7}`, string(h.Data))
	require.WithinDuration(t, before.Add(time.Hour), parseTime(t, h.PostAt), 5*time.Second)

	h = d.createdHook(member, member.post(d.hooksPath(""), hookForm(map[string]string{
		"when": "postAtLocal", "postAtLocal": "2030-12-01T09:00:00", "timezone": "Europe/Paris",
	})))
	require.Equal(t, "2030-12-01T08:00:00Z", h.PostAt)
	page := member.get(d.hooksPath("/" + h.ID))
	require.Contains(t, page.body, `<code id="hook-local">2030-12-01T09:00:00</code> in <code>Europe/Paris</code>`, "the hook's page shows its wall time")
	h = d.createdHook(member, member.post(d.hooksPath(""), hookForm(map[string]string{"when": "postAt", "postAt": "2030-01-02T15:04:05+01:00"})))
	require.Equal(t, "2030-01-02T14:04:05Z", h.PostAt)

	// Now: due at once, and its page follows it until its first attempt
	// (there is no dispatcher here: it never comes).
	p = member.post(d.hooksPath(""), hookForm(map[string]string{"when": "now", "postIn": "nonsense"}))
	h = d.createdHook(member, p)
	require.WithinDuration(t, d.dbNow(), parseTime(t, h.PostAt), 5*time.Second)
	page = member.get(p.header.Get("Location"))
	require.Contains(t, page.body, `hx-get="`+p.header.Get("Location")+`" hx-trigger="every 1s"`)
	require.Contains(t, page.body, "Its first attempt shows below when it is made.")
	require.NotContains(t, member.get(d.hooksPath("/"+h.ID)).body, `id="created"`, "only the page the form sends to says so")
	created := len(d.hookIDs())

	// The API's checks, each next to its field, naming the API's field;
	// nothing is created.
	for name, tc := range map[string]struct {
		changes map[string]string
		field   string
		says    string
	}{
		"data not JSON":     {map[string]string{"data": `{"order": }`}, "data", "data.order: malformed JSON"},
		"data repeated key": {map[string]string{"data": `{"a": 1, "a": 2}`}, "data", "data.a: duplicate field"},
		"data an array":     {map[string]string{"data": `[1]`}, "data", "data: must be a JSON object"},
		"data missing":      {map[string]string{"data": " "}, "data", "data: is required"},
		"path":              {map[string]string{"path": "no-slash"}, "path", "path: "},
		"postIn":            {map[string]string{"postIn": "soon"}, "postIn", "postIn: must be a duration"},
		"timezone":          {map[string]string{"when": "postAtLocal", "postAtLocal": "2030-12-01T09:00:00", "timezone": "Mars/Olympus"}, "timezone", "timezone: is not a known IANA time zone"},
		"postAt":            {map[string]string{"when": "postAt", "postAt": "tomorrow"}, "postAt", "postAt: must be an RFC 3339 date-time"},
	} {
		p := member.post(d.hooksPath(""), hookForm(tc.changes))
		require.Equal(t, http.StatusBadRequest, p.status, name)
		require.Contains(t, p.body, "The hook was refused: nothing was created.", name)
		requireFieldError(t, p.body, tc.field, tc.says)
	}
	// A choice of when the form does not offer (only a crafted post sends
	// one).
	p = member.post(d.hooksPath(""), hookForm(map[string]string{"when": "later"}))
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "when: choose now, an instant")
	// Both problems at once, the form's values kept (as text).
	p = member.post(d.hooksPath(""), hookForm(map[string]string{"path": "<b>x</b>", "data": `{"x": tru}`}))
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "data.x: malformed JSON")
	require.Contains(t, p.body, "path: ")
	require.Contains(t, p.body, `value="&lt;b&gt;x&lt;/b&gt;"`)
	require.Contains(t, p.body, `{&#34;x&#34;: tru}</textarea>`)
	require.Len(t, d.hookIDs(), created)

	// Past the quota's hard cap nothing is created, and the form says why.
	setPlan(d.bundle, int64(created), 100)
	p = member.post(d.hooksPath(""), hookForm(nil))
	require.Equal(t, http.StatusTooManyRequests, p.status)
	require.Contains(t, p.body, "hook quota is exhausted")
	require.Len(t, d.hookIDs(), created)
}

func TestDashboardTestDelivery(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	member := d.signedIn(account.Member)
	require.Contains(t, member.get(d.overviewPath()).body, `action="`+d.hooksPath("/test")+`"`)

	// Without a path: "/", due now, with the sample payload.
	h := d.createdHook(member, member.post(d.hooksPath("/test"), url.Values{"path": {""}}))
	require.Equal(t, "/", h.Path)
	require.JSONEq(t, `{"type":"sundial.test","message":"A test delivery from the Sundial dashboard."}`, string(h.Data))
	require.WithinDuration(t, d.dbNow(), parseTime(t, h.PostAt), 5*time.Second)
	h = d.createdHook(member, member.post(d.hooksPath("/test"), url.Values{"path": {" /ping "}}))
	require.Equal(t, "/ping", h.Path)

	// A path the API refuses: the create form, filled, to correct.
	p := member.post(d.hooksPath("/test"), url.Values{"path": {"ping"}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "The test delivery was refused: nothing was created.")
	require.Contains(t, p.body, `value="ping"`)
	require.Contains(t, p.body, "sundial.test")
	require.Len(t, d.hookIDs(), 2)
}

// A viewer reads the create form, disabled, and cannot post it or send a
// test delivery.
func TestDashboardCreateHookViewer(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	viewer := d.signedIn(account.Viewer)
	p := viewer.get(d.hooksPath("/new"))
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "<fieldset disabled>")
	require.Contains(t, p.body, `id="read-only"`)
	require.NotContains(t, p.body, "Schedule hook</button>")
	require.NotContains(t, viewer.get(d.overviewPath()).body, "Send test delivery")
	require.NotContains(t, viewer.get(d.hooksPath("")).body, `id="new-hook"`)
	require.Equal(t, http.StatusForbidden, viewer.post(d.hooksPath(""), hookForm(nil)).status)
	require.Equal(t, http.StatusForbidden, viewer.post(d.hooksPath("/test"), nil).status)
	require.Empty(t, d.hookIDs())
}

// A form larger than the dashboard takes is refused as such, not as an
// expired form.
func TestDashboardFormTooLarge(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	member := d.signedIn(account.Member)
	p := member.post(d.hooksPath(""), hookForm(map[string]string{"data": `{"x":"` + strings.Repeat("a", 70<<10) + `"}`}))
	require.Equal(t, http.StatusRequestEntityTooLarge, p.status)
	require.Contains(t, p.body, "larger than the dashboard takes (64 KiB)")
}

// sequenceForm is a valid create form: weekdays at 09:30 in Paris, two
// steps, with changes.
func sequenceForm(changes url.Values) url.Values {
	form := url.Values{
		"name": {"etl-nightly"}, "kind": {"calendar"}, "frequency": {"weekly"}, "timezone": {"Europe/Paris"},
		"hour": {"9"}, "minute": {"30"}, "daysOfWeek": {"mon", "fri"}, "daysOfMonth": {"3"}, "every": {"2h"},
		"catchUp": {"all"}, "overlap": {"skip"},
		"steps": {`[{"name": "extract", "path": "/etl/extract", "data": {"source": "orders"}},
		  {"name": "load", "path": "/etl/load", "data": {}, "dependsOn": ["extract"],
		   "retryOverride": {"minRetries": 3, "delaySecs": 30, "strategy": "fixed"}}]`},
	}
	for k, v := range changes {
		form[k] = v
	}
	return form
}

// savedSequence follows a sequence form's redirect and reads the sequence
// through the API.
func (d dashBundle) savedSequence(p page) sequenceJSON {
	d.t.Helper()
	require.Equal(d.t, http.StatusSeeOther, p.status, p.body)
	prefix := d.overviewPath() + "/sequences/"
	loc := p.header.Get("Location")
	require.True(d.t, strings.HasPrefix(loc, prefix), loc)
	return d.sequence(strings.TrimPrefix(loc, prefix))
}

func TestDashboardCreateAndEditSequence(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	member := d.signedIn(account.Member)
	sequences := d.overviewPath() + "/sequences"
	require.Contains(t, member.get(sequences).body, `href="`+sequences+`/new"`)
	require.Equal(t, http.StatusOK, member.get(sequences+"/new").status)

	// Of the schedule, only the fields of the kind and frequency chosen.
	s := d.savedSequence(member.post(sequences, sequenceForm(nil)))
	require.Equal(t, "etl-nightly", s.Name)
	require.JSONEq(t, `{"frequency":"weekly","timezone":"Europe/Paris","time":{"hour":9,"minute":30},"daysOfWeek":["mon","fri"]}`, string(s.Schedule))
	require.Equal(t, "all", s.CatchUp)
	require.Equal(t, "skip", s.Overlap)
	require.Len(t, s.Steps, 2)
	require.Equal(t, []string{"extract"}, s.Steps[1].DependsOn)
	require.JSONEq(t, `{"minRetries":3,"delaySecs":30,"strategy":"fixed","backoffFactor":2,"jitter":false}`, string(s.Steps[1].RetryOverride))

	every := d.savedSequence(member.post(sequences, sequenceForm(url.Values{
		"name": {"every-2h"}, "kind": {"every"}, "startAt": {"2030-01-02T00:05:00Z"},
	})))
	require.JSONEq(t, `{"every":"2h"}`, string(every.Schedule))
	require.Equal(t, time.Date(2030, 1, 2, 0, 5, 0, 0, time.UTC), every.StartAt)
	monthly := d.savedSequence(member.post(sequences, sequenceForm(url.Values{
		"name": {"monthly"}, "frequency": {"monthly"}, "daysOfMonth": {"1, 15 -1"},
	})))
	require.JSONEq(t, `{"frequency":"monthly","timezone":"Europe/Paris","time":{"hour":9,"minute":30},"daysOfMonth":[1,15,-1]}`, string(monthly.Schedule))
	hourly := d.savedSequence(member.post(sequences, sequenceForm(url.Values{"name": {"hourly"}, "frequency": {"hourly"}})))
	require.JSONEq(t, `{"frequency":"hourly","timezone":"Europe/Paris","time":{"minute":30}}`, string(hourly.Schedule))

	// The API's checks, each next to its field; nothing is created.
	for name, tc := range map[string]struct {
		changes url.Values
		field   string
		says    string
	}{
		"name":              {url.Values{"name": {"Bad Name"}}, "name", "name: must be 1 to 100"},
		"name taken":        {url.Values{}, "name", "name: is used by another sequence"},
		"hour not a number": {url.Values{"name": {"x1"}, "hour": {"nine"}}, "minute", "schedule.time.hour: must be a whole number"},
		"hour out of range": {url.Values{"name": {"x2"}, "hour": {"25"}}, "minute", "schedule.time.hour: must be 0-23"},
		"timezone":          {url.Values{"name": {"x3"}, "timezone": {"Mars/Olympus"}}, "timezone", "schedule.timezone: is not a known"},
		"no weekday":        {url.Values{"name": {"x4"}, "daysOfWeek": nil}, "daysOfWeek", "schedule.daysOfWeek: must list at least one day"},
		"every":             {url.Values{"name": {"x5"}, "kind": {"every"}, "every": {"30s"}}, "every", "schedule.every: must be at least 1m"},
		"steps not JSON":    {url.Values{"name": {"x6"}, "steps": {`[{"name": }]`}}, "steps", "steps[0].name: malformed JSON"},
		"steps unknown":     {url.Values{"name": {"x7"}, "steps": {`[{"name": "a", "path": "/a", "data": {}, "colour": 1}]`}}, "steps", "steps[0].colour: unknown field"},
		"step path":         {url.Values{"name": {"x8"}, "steps": {`[{"name": "a", "path": "a", "data": {}}]`}}, "steps", "steps[0].path: "},
		"endAt":             {url.Values{"name": {"x9"}, "endAt": {"soon"}}, "endAt", "endAt: must be an RFC 3339"},
	} {
		p := member.post(sequences, sequenceForm(tc.changes))
		require.Contains(t, []int{http.StatusBadRequest, http.StatusConflict}, p.status, name)
		require.Contains(t, p.body, "The sequence was refused: nothing was created.", name)
		requireFieldError(t, p.body, tc.field, tc.says)
	}
	list, _ := d.sequencePage("/v1/sequences")
	require.Len(t, list, 4)

	// The edit form is the definition; saved with a change, only that
	// changes (the step's retry override included).
	edit := sequences + "/" + s.ID + "/edit"
	require.Contains(t, member.get(sequences+"/"+s.ID).body, `href="`+edit+`"`)
	p := member.get(edit)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `value="etl-nightly"`)
	require.Contains(t, p.body, `value="mon" checked`)
	require.NotContains(t, p.body, `value="tue" checked`)
	require.Contains(t, p.body, `&#34;retryOverride&#34;: {`)
	require.Contains(t, p.body, `action="`+sequences+"/"+s.ID+`"`)
	changed := d.savedSequence(member.post(sequences+"/"+s.ID, sequenceForm(url.Values{"minute": {"45"}, "steps": {formValue(t, p.body, "steps")}})))
	require.Equal(t, s.ID, changed.ID)
	require.JSONEq(t, `{"frequency":"weekly","timezone":"Europe/Paris","time":{"hour":9,"minute":45},"daysOfWeek":["mon","fri"]}`, string(changed.Schedule))
	require.Equal(t, s.Steps, changed.Steps)
	require.Equal(t, s.StartAt, changed.StartAt)

	p = member.post(sequences+"/"+s.ID, sequenceForm(url.Values{"name": {"monthly"}}))
	require.Equal(t, http.StatusConflict, p.status)
	require.Contains(t, p.body, "The sequence was refused: nothing was changed.")
	require.Equal(t, "etl-nightly", d.sequence(s.ID).Name)

	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	theirs := d.createSequence(fmt.Sprintf(weekdaysParis, "theirs"), as(other.APIKey))
	require.Equal(t, http.StatusNotFound, member.get(sequences+"/"+theirs.ID+"/edit").status)
	require.Equal(t, http.StatusNotFound, member.post(sequences+"/"+theirs.ID, sequenceForm(url.Values{"name": {"stolen"}})).status)
	require.Equal(t, "theirs", d.sequence(theirs.ID, as(other.APIKey)).Name)

	viewer := d.signedIn(account.Viewer)
	p = viewer.get(edit)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "<fieldset disabled>")
	require.NotContains(t, p.body, "Save sequence</button>")
	require.Equal(t, http.StatusForbidden, viewer.post(sequences+"/"+s.ID, sequenceForm(url.Values{"name": {"viewed"}})).status)
	require.Equal(t, http.StatusForbidden, viewer.post(sequences, sequenceForm(url.Values{"name": {"viewed"}})).status)
}

var textareas = regexp.MustCompile(`(?s)<textarea[^>]* name="([^"]+)"[^>]*>(.*?)</textarea>`)

// formValue is the text of a page's textarea named name, unescaped.
func formValue(t *testing.T, body, name string) string {
	t.Helper()
	for _, m := range textareas.FindAllStringSubmatch(body, -1) {
		if m[1] == name {
			return html.UnescapeString(m[2])
		}
	}
	require.Fail(t, "no textarea "+name)
	return ""
}

func TestDashboardCreateAndEditChannels(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	member := d.signedIn(account.Member)
	channels := d.overviewPath() + "/channels"
	require.Contains(t, member.get(channels).body, `href="`+channels+`/new"`)
	require.Equal(t, http.StatusOK, member.get(channels+"/new").status)
	saved := func(p page) channelJSON {
		t.Helper()
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		loc := p.header.Get("Location")
		id := strings.TrimPrefix(loc, channels+"#channel-")
		require.NotEqual(t, loc, id, loc)
		return d.channel(id)
	}

	// A webhook: the URL is shown (as by the API), the events as checked.
	hook := saved(member.post(channels, url.Values{
		"name": {"Pager"}, "type": {"webhook"}, "url": {webhookURL}, "events": {"hook.failed", "quota.threshold"},
		"email.port": {"587"}, "email.host": {"ignored.example.com"},
	}))
	require.Equal(t, "webhook", hook.Type)
	require.Equal(t, webhookURL, hook.URL)
	require.Equal(t, []string{"hook.failed", "quota.threshold"}, hook.Events)
	require.False(t, hook.Enabled)

	// A chat channel: its URL is write-only, never shown in the form again;
	// an empty URL keeps it.
	chat := saved(member.post(channels, url.Values{"name": {"Ops chat"}, "type": {"chat"}, "url": {chatURL}, "enabled": {"on"}}))
	require.True(t, chat.Enabled)
	require.Empty(t, chat.Events)
	p := member.get(channels + "/" + chat.ID + "/edit")
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, "chat-token-secret")
	require.Contains(t, p.body, chat.URL) // redacted
	require.NotContains(t, member.get(channels).body, "chat-token-secret")
	chat = saved(member.post(channels+"/"+chat.ID, url.Values{"name": {"Ops chat 2"}, "url": {""}, "enabled": {"on"}, "events": {"hook.failed"}}))
	require.Equal(t, "Ops chat 2", chat.Name)
	require.Equal(t, []string{"hook.failed"}, chat.Events)
	require.Equal(t, d.channel(chat.ID).URL, chat.URL)
	// A refused change keeps nothing of a chat URL typed.
	p = member.post(channels+"/"+chat.ID, url.Values{"name": {""}, "url": {"https://hooks.slack.example.com/services/new-secret"}})
	require.Equal(t, http.StatusBadRequest, p.status)
	requireFieldError(t, p.body, "name", "name: is required")
	require.NotContains(t, p.body, "new-secret")

	// An e-mail channel: the password is write-only; empty keeps it, the
	// box removes the username and password.
	mail := url.Values{
		"name": {"On call"}, "type": {"email"}, "url": {"https://ignored.example.com"}, "enabled": {"on"},
		"email.host": {"smtp.example.com"}, "email.port": {"587"}, "email.tls": {"starttls"},
		"email.username": {"sundial"}, "email.password": {smtpPassword},
		"email.from": {"sundial@example.com"}, "email.to": {"oncall@example.com, lead@example.com"},
	}
	email := saved(member.post(channels, mail))
	require.Equal(t, []string{"oncall@example.com", "lead@example.com"}, email.Email.To)
	require.True(t, email.Email.PasswordSet)
	p = member.get(channels + "/" + email.ID + "/edit")
	require.NotContains(t, p.body, smtpPassword)
	require.Contains(t, p.body, "currently set; leave empty to keep it")
	mail.Set("email.password", "")
	mail.Set("email.port", "2525")
	email = saved(member.post(channels+"/"+email.ID, mail))
	require.Equal(t, 2525, email.Email.Port)
	require.True(t, email.Email.PasswordSet)
	require.Equal(t, "sundial", email.Email.Username)
	mail.Set("email.clearCredentials", "on")
	email = saved(member.post(channels+"/"+email.ID, mail))
	require.False(t, email.Email.PasswordSet)
	require.Empty(t, email.Email.Username)

	// The API's checks, each next to its field; nothing is created.
	for name, tc := range map[string]struct {
		changes url.Values
		field   string
		says    string
	}{
		"port":     {url.Values{"email.port": {"smtp"}}, "email.port", "email.port: must be a whole number"},
		"to":       {url.Values{"email.to": {"not-an-address"}}, "email.to", `email.to[0]: "not-an-address" is not an e-mail address`},
		"tls":      {url.Values{"email.tls": {"none"}}, "email.tls", "email.tls: "},
		"password": {url.Values{"email.password": {""}}, "email.password", "email.password: username and password go together"},
		"url":      {url.Values{"type": {"webhook"}, "url": {"ftp://x"}}, "url", "url: "},
		"name":     {url.Values{"name": {" "}}, "name", "name: is required"},
	} {
		form := url.Values{}
		for k, v := range mail {
			form[k] = v
		}
		form.Del("email.clearCredentials")
		form.Set("email.password", smtpPassword)
		for k, v := range tc.changes {
			form[k] = v
		}
		p := member.post(channels, form)
		require.Equal(t, http.StatusBadRequest, p.status, name)
		require.Contains(t, p.body, "The channel was refused: nothing was created.", name)
		requireFieldError(t, p.body, tc.field, tc.says)
		require.NotContains(t, p.body, smtpPassword, name)
	}
	require.Len(t, d.channels(), 3)
	require.NotContains(t, d.logs.String(), smtpPassword)
	require.NotContains(t, d.logs.String(), "chat-token-secret")

	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	theirs := d.createChannel(webhookBody, as(other.APIKey))
	require.Equal(t, http.StatusNotFound, member.get(channels+"/"+theirs.ID+"/edit").status)
	require.Equal(t, http.StatusNotFound, member.post(channels+"/"+theirs.ID, url.Values{"name": {"stolen"}}).status)
	require.Equal(t, "Pager", d.channel(theirs.ID, as(other.APIKey)).Name)

	viewer := d.signedIn(account.Viewer)
	p = viewer.get(channels + "/" + hook.ID + "/edit")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "<fieldset disabled>")
	require.NotContains(t, p.body, "Save channel</button>")
	require.NotContains(t, viewer.get(channels).body, "/edit")
	require.Equal(t, http.StatusForbidden, viewer.post(channels+"/"+hook.ID, url.Values{"name": {"viewed"}}).status)
	require.Equal(t, http.StatusForbidden, viewer.post(channels, mail).status)
	require.Equal(t, "Pager", d.channel(hook.ID).Name)
}

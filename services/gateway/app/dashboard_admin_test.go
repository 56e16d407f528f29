package app_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// signedIn is a browser signed in as a new user of the project with role.
func (d dashBundle) signedIn(role account.Role) *browser {
	d.t.Helper()
	u, password := d.user(role)
	br := d.browser()
	require.Equal(d.t, http.StatusSeeOther, br.signIn(u.Email, password).status)
	return br
}

// post sends a form with the session's CSRF token.
func (b *browser) post(path string, form url.Values) page {
	b.d.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf())
	return b.do(http.MethodPost, path, form)
}

var newKeyValue = regexp.MustCompile(`<code class="secret">([^<]+)</code>`)

func TestDashboardKeysCreateShownOnceAndRevoke(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	br := d.signedIn(account.Owner)
	keys := d.overviewPath() + "/keys"

	p := br.get(keys)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, d.creds.APIKey[:8]) // the project's key, by its prefix
	require.NotContains(t, p.body, d.creds.APIKey)
	require.NotContains(t, p.body, d.creds.SigningKey)

	p = br.post(keys+"/api", url.Values{"name": {`<b>ci</b>`}})
	require.Equal(t, http.StatusCreated, p.status)
	m := newKeyValue.FindStringSubmatch(p.body)
	require.NotNil(t, m, p.body)
	plain := m[1]
	require.Contains(t, p.body, "&lt;b&gt;ci&lt;/b&gt;")
	require.NotContains(t, p.body, "<b>ci</b>")
	// The key works against the API, and is never shown again.
	created := d.apiKeys(as(plain))
	require.Len(t, created, 2)
	p = br.get(keys)
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, plain)
	require.NotContains(t, d.logs.String(), plain)

	var id string
	for _, k := range created {
		if k.Name == "<b>ci</b>" {
			id = k.ID
		}
	}
	require.NotEmpty(t, id)
	require.Equal(t, http.StatusSeeOther, br.post(keys+"/api/"+id+"/revoke", nil).status)
	require.Equal(t, http.StatusUnauthorized, d.do(http.MethodGet, "/v1/api-keys", nil, as(plain)).status)

	// A name the API refuses is refused here, next to the field.
	p = br.post(keys+"/api", url.Values{"name": {"bad\x01name"}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "name: ")
	require.Len(t, d.apiKeys(), 2)
}

func TestDashboardSigningKeysRotateAndRevoke(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	br := d.signedIn(account.Owner)
	keys := d.overviewPath() + "/keys"

	p := br.post(keys+"/signing/rotate", url.Values{"grace_hours": {"0"}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "grace period: must be")
	require.Len(t, d.signingKeys(), 1)

	active := d.signingKeys()[0]
	p = br.post(keys+"/signing/"+active.ID+"/revoke", nil)
	require.Equal(t, http.StatusConflict, p.status)

	require.Equal(t, http.StatusSeeOther, br.post(keys+"/signing/rotate", url.Values{"grace_hours": {"2"}}).status)
	after := d.signingKeys()
	require.Len(t, after, 2)
	p = br.get(keys)
	require.Contains(t, p.body, "retiring")
	for _, k := range after {
		require.NotContains(t, p.body, k.Key)
	}
	require.Equal(t, http.StatusSeeOther, br.post(keys+"/signing/"+active.ID+"/revoke", nil).status)
	require.Len(t, d.signingKeys(), 1)
}

func TestDashboardKeysAreForOwnersOnly(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	keys := d.overviewPath() + "/keys"
	apiKeyID := d.apiKeys()[0].ID
	signingID := d.signingKeys()[0].ID
	posts := map[string]url.Values{
		keys + "/api":                              {"name": {"x"}},
		keys + "/api/" + apiKeyID + "/revoke":      nil,
		keys + "/signing/rotate":                   {"grace_hours": {"2"}},
		keys + "/signing/" + signingID + "/revoke": nil,
	}
	for _, role := range []account.Role{account.Member, account.Viewer} {
		br := d.signedIn(role)
		p := br.get(keys)
		require.Equal(t, http.StatusOK, p.status, role)
		require.NotContains(t, p.body, "Create API key", role)
		require.NotContains(t, p.body, "Rotate signing key", role)
		require.NotContains(t, p.body, "/revoke", role)
		for path, form := range posts {
			require.Equal(t, http.StatusForbidden, br.post(path, form).status, "%s %s", role, path)
		}
	}
	require.Len(t, d.apiKeys(), 1)
	require.Len(t, d.signingKeys(), 1)

	// An owner needs the CSRF token on every key route.
	owner := d.signedIn(account.Owner)
	for path, form := range posts {
		require.Equal(t, http.StatusForbidden, owner.do(http.MethodPost, path, form).status, path)
	}
	require.Len(t, d.apiKeys(), 1)
}

func TestDashboardKeysOfAnotherProjectAreNotFound(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	theirKey := d.apiKeys(as(other.APIKey))[0].ID
	theirSigning := d.signingKeys(as(other.APIKey))[0].ID
	// A second key of theirs, so that the last-key rule is not what stops it.
	d.createAPIKey(`{"name":"second"}`, as(other.APIKey))
	d.do(http.MethodPost, "/v1/signing-keys/rotate", strings.NewReader(`{}`), as(other.APIKey))

	br := d.signedIn(account.Owner)
	keys := d.overviewPath() + "/keys"
	require.Equal(t, http.StatusNotFound, br.post(keys+"/api/"+theirKey+"/revoke", nil).status)
	require.Equal(t, http.StatusNotFound, br.post(keys+"/signing/"+theirSigning+"/revoke", nil).status)
	require.Equal(t, http.StatusNotFound, br.post(keys+"/api/not-an-id/revoke", nil).status)
	require.Equal(t, http.StatusNotFound, br.get("/dashboard/p/"+other.ProjectID+"/keys").status)
	require.Equal(t, http.StatusOK, d.do(http.MethodGet, "/v1/api-keys", nil, as(other.APIKey)).status)
	for _, k := range d.apiKeys(as(other.APIKey)) {
		require.Empty(t, k.RevokedAt)
	}
	require.Len(t, d.signingKeys(as(other.APIKey)), 2)
}

func TestDashboardSettingsForm(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	br := d.signedIn(account.Member)
	settings := d.overviewPath() + "/settings"

	p := br.get(settings)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "currently not set")

	secret := "Bearer s3cret-" + d.project.String()
	p = br.post(settings, url.Values{
		"name": {"Acme 2"}, "domain": {"hooks2.example.com"}, "signatureScheme": {"both"},
		"asyncTimeoutSecs": {"600"}, "maxConcurrency": {"7"}, "authorizationHeader": {secret},
		"retryPolicy.minRetries": {"4"}, "retryPolicy.delaySecs": {"30"}, "retryPolicy.strategy": {"fixed"},
		"retryPolicy.backoffFactor": {"2"}, "retryPolicy.maxDelaySecs": {"3600"}, "retryPolicy.jitter": {"false"},
		"alerts.groupWaitSecs": {"60"}, "alerts.followUpMinSecs": {"300"}, "alerts.followUpMaxSecs": {"3600"},
		"alerts.ownerEmails": {"a@example.com, b@example.com"},
	})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)

	got := decodeStrict[struct {
		Data map[string]any `json:"data"`
	}](t, d.do(http.MethodGet, "/v1/project", nil).body).Data
	require.Equal(t, "Acme 2", got["name"])
	require.Equal(t, "hooks2.example.com", got["domain"])
	require.Equal(t, "both", got["signatureScheme"])
	require.EqualValues(t, 600, got["asyncTimeoutSecs"])
	require.EqualValues(t, 7, got["maxConcurrency"])
	require.Equal(t, true, got["authorizationHeaderSet"])
	require.EqualValues(t, 4, got["retryPolicy"].(map[string]any)["minRetries"])
	require.Equal(t, []any{"a@example.com", "b@example.com"}, got["alerts"].(map[string]any)["ownerEmails"])

	p = br.get(settings)
	require.Contains(t, p.body, "currently set")
	require.NotContains(t, p.body, "s3cret")
	require.NotContains(t, d.logs.String(), "s3cret")

	// Errors are the API's, next to their fields; nothing changes.
	p = br.post(settings, url.Values{"asyncTimeoutSecs": {"soon"}, "domain": {`<i>x</i>`}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "must be a whole number")
	p = br.post(settings, url.Values{"retryPolicy.minRetries": {"-1"}, "domain": {`<i>x</i>`}, "maxConcurrency": {""}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "&lt;i&gt;")
	require.NotContains(t, p.body, "<i>x</i>")
	require.EqualValues(t, 7, decodeStrict[struct {
		Data map[string]any `json:"data"`
	}](t, d.do(http.MethodGet, "/v1/project", nil).body).Data["maxConcurrency"])

	// Removing the header and the cap.
	p = br.post(settings, url.Values{"authorizationHeader.clear": {"on"}, "maxConcurrency": {""}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	got = decodeStrict[struct {
		Data map[string]any `json:"data"`
	}](t, d.do(http.MethodGet, "/v1/project", nil).body).Data
	require.Equal(t, false, got["authorizationHeaderSet"])
	require.Nil(t, got["maxConcurrency"])
}

func TestDashboardSettingsViewer(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	br := d.signedIn(account.Viewer)
	settings := d.overviewPath() + "/settings"
	p := br.get(settings)
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, "Save settings")
	require.Contains(t, p.body, "<fieldset disabled>")
	require.Equal(t, http.StatusForbidden, br.post(settings, url.Values{"asyncTimeoutSecs": {"600"}}).status)
}

func TestDashboardListeners(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	br := d.signedIn(account.Viewer)
	listeners := d.overviewPath() + "/listeners"

	p := br.get(listeners)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "No listener: the project")
	// The overview says where deliveries go: the domain, or a listener
	// while one listens.
	require.Contains(t, br.get(d.overviewPath()).body, `<p id="delivers-to">Delivers to <code>`)

	_, err := d.q.OpenListenerPresence(d.ctx, store.OpenListenerPresenceParams{
		GatewayID: "gw-<b>1</b>", Sockets: 3, WindowSeconds: 300, ProjectID: d.project,
	})
	require.NoError(t, err)
	p = br.get(listeners)
	require.Contains(t, p.body, "<strong>listening</strong>")
	require.Contains(t, p.body, "gw-&lt;b&gt;1&lt;/b&gt;")
	require.Contains(t, p.body, "<td>3</td>")
	require.Contains(t, br.get(d.overviewPath()).body, `<p id="delivers-to">Delivers to <a href="`+listeners+`">a listener</a>`)

	_, err = d.q.CloseListenerPresence(d.ctx, store.CloseListenerPresenceParams{GatewayID: "gw-<b>1</b>", ProjectID: d.project, WindowSeconds: 300})
	require.NoError(t, err)
	p = br.get(listeners)
	require.Contains(t, p.body, "<strong>holding</strong>")
	require.Contains(t, p.body, "Hooks held now: 0.")

	for range 2 {
		res := d.post(`{"path":"/held","data":{},"postAt":"2030-01-01T00:00:00Z"}`)
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
		created := res.hook(t)
		require.NoError(t, d.tq.HoldHookForTest(d.ctx, storetest.HoldHookForTestParams{ProjectID: d.project, ID: uuid.MustParse(created.ID)}))
	}
	require.Contains(t, br.get(listeners).body, "Hooks held now: 2.")
}

func TestDashboardChannels(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	c := d.createChannel(`{"name":"<b>Ops</b>","type":"chat","url":"` + chatURL + `"}`)
	errText := "<i>receiver</i> answered 500"
	d.recordTry(c.ID, "sent", nil)
	d.recordTry(c.ID, "failed", &errText)

	viewer := d.signedIn(account.Viewer)
	channels := d.overviewPath() + "/channels"
	p := viewer.get(channels)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "&lt;b&gt;Ops&lt;/b&gt;")
	require.Contains(t, p.body, "1 sent, 1 failed")
	require.Contains(t, p.body, "&lt;i&gt;receiver&lt;/i&gt; answered 500")
	require.NotContains(t, p.body, "<i>receiver</i>")
	require.NotContains(t, p.body, chatURL)
	require.NotContains(t, p.body, "Send test")
	require.Equal(t, http.StatusForbidden, viewer.post(channels+"/"+c.ID+"/test", nil).status)

	member := d.signedIn(account.Member)
	require.Equal(t, http.StatusForbidden, member.do(http.MethodPost, channels+"/"+c.ID+"/test", url.Values{}).status) // no CSRF token
	played := d.notifier(c.ID, "failed", &errText)
	p = member.post(channels+"/"+c.ID+"/test", nil)
	require.NoError(t, <-played)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "Send test: <strong>failed</strong>")
	require.Contains(t, p.body, "2 failed")

	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	theirs := d.createChannel(chatBody, as(other.APIKey))
	require.Equal(t, http.StatusNotFound, member.post(channels+"/"+theirs.ID+"/test", nil).status)
	require.Equal(t, http.StatusNotFound, member.post(channels+"/not-an-id/test", nil).status)
}

func TestDashboardSequences(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	s := d.createSequence(fmt.Sprintf(weekdaysParis, "etl"))
	sequences := d.overviewPath() + "/sequences"

	run := uuid.Must(uuid.NewV7())
	require.NoError(t, d.tq.InsertSequenceRunForTest(d.ctx, storetest.InsertSequenceRunForTestParams{
		ID: run, ProjectID: d.project, SequenceID: uuid.MustParse(s.ID), Slot: time.Date(2030, 1, 2, 8, 0, 0, 0, time.UTC),
		Trigger: "schedule", Status: "running",
	}))
	hookID := uuid.New()
	require.NoError(t, d.tq.InsertSequenceRunStepForTest(d.ctx, storetest.InsertSequenceRunStepForTestParams{
		RunID: run, Name: "extract", DependsOn: []string{}, HookID: &hookID, Status: "completed",
	}))
	require.NoError(t, d.tq.InsertSequenceRunStepForTest(d.ctx, storetest.InsertSequenceRunStepForTestParams{
		RunID: run, Name: "transform", DependsOn: []string{"extract"}, Status: "waiting",
	}))

	viewer := d.signedIn(account.Viewer)
	p := viewer.get(sequences)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, ">etl</a>")
	require.Contains(t, p.body, sequences+"/"+s.ID)
	p = viewer.get(sequences + "/" + s.ID)
	require.Equal(t, http.StatusOK, p.status)
	// The schedule in words, its JSON on hover (as text: the quotes escaped).
	require.Contains(t, p.body, ">Weekdays at 09:00, Europe/Paris</strong>")
	require.Contains(t, p.body, "&#34;timezone&#34;:&#34;Europe/Paris&#34;")
	require.Contains(t, p.body, "/etl/transform")
	require.Contains(t, p.body, "<td>transform</td>") // a step that load depends on
	require.NotContains(t, p.body, "Trigger a run now")
	// The run, with its steps' status, as GET /v1/sequences/{id}/runs.
	require.Contains(t, p.body, "2030-01-02 08:00:00 UTC")
	require.Contains(t, p.body, ">extract</a>: completed, transform: waiting")
	require.Contains(t, p.body, d.overviewPath()+"/hooks/"+hookID.String())
	// The next runs are the API's preview.
	preview := data[struct {
		RunTimes []time.Time `json:"runTimes"`
	}](t, d.do(http.MethodGet, "/v1/sequences/"+s.ID+"/preview", nil), http.StatusOK)
	require.NotEmpty(t, preview.RunTimes)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	for _, at := range preview.RunTimes {
		// In the schedule's own zone (09:00 in Paris), UTC on hover.
		require.Contains(t, p.body, `title="`+at.UTC().Format("2006-01-02 15:04:05 UTC")+`">`+at.In(paris).Format("Mon 2006-01-02 15:04:05")+" Europe/Paris<")
		require.Equal(t, 9, at.In(paris).Hour())
	}
	for _, action := range []string{"pause", "resume", "trigger"} {
		require.Equal(t, http.StatusForbidden, viewer.post(sequences+"/"+s.ID+"/"+action, nil).status, action)
	}

	member := d.signedIn(account.Member)
	require.Contains(t, member.get(sequences+"/"+s.ID).body, "Trigger a run now")
	for _, action := range []string{"pause", "resume", "trigger"} {
		require.Equal(t, http.StatusForbidden, member.do(http.MethodPost, sequences+"/"+s.ID+"/"+action, url.Values{}).status, action) // no CSRF token
	}
	require.Equal(t, http.StatusSeeOther, member.post(sequences+"/"+s.ID+"/pause", nil).status)
	require.Equal(t, "paused", d.sequence(s.ID).Status)
	require.Contains(t, member.get(sequences+"/"+s.ID).body, "Resume</button>")
	require.Equal(t, http.StatusSeeOther, member.post(sequences+"/"+s.ID+"/resume", nil).status)
	require.Equal(t, "active", d.sequence(s.ID).Status)
	require.Equal(t, http.StatusSeeOther, member.post(sequences+"/"+s.ID+"/trigger", nil).status)

	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	theirs := d.createSequence(fmt.Sprintf(weekdaysParis, "theirs"), as(other.APIKey))
	require.Equal(t, http.StatusNotFound, member.get(sequences+"/"+theirs.ID).status)
	require.Equal(t, http.StatusNotFound, member.get(sequences+"/not-an-id").status)
	require.Equal(t, http.StatusNotFound, member.post(sequences+"/"+theirs.ID+"/pause", nil).status)
	require.Equal(t, http.StatusNotFound, member.post(sequences+"/"+s.ID+"/explode", nil).status)
	require.Equal(t, "active", d.sequence(theirs.ID, as(other.APIKey)).Status)
	require.Equal(t, http.StatusBadRequest, member.get(sequences+"?cursor=nonsense").status)
}

// sequence reads a sequence through the API.
func (d dashBundle) sequence(id string, mods ...func(*http.Request)) sequenceJSON {
	d.t.Helper()
	res := d.do(http.MethodGet, "/v1/sequences/"+id, nil, mods...)
	require.Equal(d.t, http.StatusOK, res.status, string(res.body))
	return res.sequence(d.t)
}

// TestDashboardSettingsFailurePolicy: the settings page has a choice per
// failure class (pause only where it may), saved as PATCH /v1/project
// saves it, and a refused one is named next to its class.
func TestDashboardSettingsFailurePolicy(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	br := d.signedIn(account.Member)
	settings := d.overviewPath() + "/settings"

	p := br.get(settings)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<select id="fp-410" name="failurePolicy.410">`)
	require.Regexp(t, `(?s)name="failurePolicy.listener">\s*<option value="retry" selected>retry</option><option value="fail">fail</option>\s*</select>`, p.body,
		"no pause for a listener's failure")

	p = br.post(settings, url.Values{"failurePolicy.410": {"pause"}, "failurePolicy.4xx": {"fail"}, "failurePolicy.5xx": {"retry"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	got := decodeStrict[struct {
		Data map[string]any `json:"data"`
	}](t, d.do(http.MethodGet, "/v1/project", nil).body).Data["failurePolicy"].(map[string]any)
	require.Equal(t, "pause", got["410"])
	require.Equal(t, "fail", got["4xx"])
	require.Equal(t, "retry", got["5xx"])
	require.Contains(t, br.get(settings).body, `<option value="pause" selected>pause</option>`)

	p = br.post(settings, url.Values{"failurePolicy.lost": {"pause"}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "cannot pause")
}

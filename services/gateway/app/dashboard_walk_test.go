package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/dashboard"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// The walks below iterate over dashboard.Routes: a route added to routes.go
// is walked without being listed here. What they need per route is how to
// fill its wildcards, keyed by the path segment before the wildcard; a
// route whose wildcard has no entry fails the walk until one is added.

// walkActions are the real {action} names, by the segment before {id} or
// {action}: every one is tried, so that a hole would act.
var walkActions = map[string][]string{
	"hooks":     {string(bulk.ActionRetry), string(bulk.ActionReplay), string(bulk.ActionCancel)},
	"bulk":      {string(bulk.ActionRetry), string(bulk.ActionReplay), string(bulk.ActionCancel)},
	"sequences": {"pause", "resume", "trigger"},
}

// sessionRoutes are the state-changing routes outside a project: they act
// on the caller's own sign-in or sessions only (TestDashboardSignIn,
// TestDashboardSignOut, TestDashboardSetPasswordLink). Any other one fails
// the isolation walk until it is walked.
var sessionRoutes = map[string]bool{
	"POST /dashboard/signin": true, "POST /dashboard/set-password": true,
	"POST /dashboard/signout": true, "POST /dashboard/signout-everywhere": true,
}

// walkProject is a project with an object of every kind a route takes by
// id, named with tag so that a page showing any of it is caught.
type walkProject struct {
	id  uuid.UUID
	key string
	// ids are the objects' ids by the segment before {id} in a route.
	ids map[string][]string
	// marks are strings only this project's pages may contain.
	marks    []string
	sequence string
}

// seedWalkProject fills project id (API key key) with hooks in every
// status a hook action acts on (the failed one with an attempt), a second
// API key and a retiring signing key (so that the revocations are not
// refused for being the last or the active one), a channel, a sequence and
// a listener presence.
func (d dashBundle) seedWalkProject(id uuid.UUID, key, tag string) walkProject {
	d.t.Helper()
	p := walkProject{id: id, key: key, ids: map[string][]string{}, marks: []string{tag, id.String()}}
	for _, status := range []string{"failed", "retry", "completed", "pending"} {
		params := storetest.InsertHookForBulkTestParams{
			ID: uuid.Must(uuid.NewV7()), ProjectID: id, Path: "/" + tag + "-" + status,
			Domain: tag + ".example.com", Data: json.RawMessage(`{"tag":"` + tag + `"}`), PostAt: bulkDay, Status: status,
		}
		if status != "pending" {
			params.Attempts, params.TryAt = 1, &bulkDay
		}
		if status == "failed" || status == "retry" {
			params.FailureError = ptr("HTTP 503 " + tag)
		}
		h, err := d.tq.InsertHookForBulkTest(d.ctx, params)
		require.NoError(d.t, err)
		if status == "failed" {
			require.NoError(d.t, d.tq.InsertAttemptForDashboardTest(d.ctx, storetest.InsertAttemptForDashboardTestParams{
				HookID: h.ID, Attempt: 1, StatusCode: ptr(int32(503)), Error: params.FailureError, ResponseExcerpt: ptr("busy " + tag),
			}))
		}
		p.ids["hooks"] = append(p.ids["hooks"], h.ID.String())
	}
	d.createAPIKey(`{"name":"`+tag+` second"}`, as(key))
	res := d.do(http.MethodPost, "/v1/signing-keys/rotate", strings.NewReader(`{}`), as(key))
	require.Equal(d.t, http.StatusCreated, res.status, string(res.body))
	for _, k := range d.apiKeys(as(key)) {
		p.ids["api"] = append(p.ids["api"], k.ID)
		p.marks = append(p.marks, k.ID)
	}
	for _, k := range d.signingKeys(as(key)) {
		p.ids["signing"] = append(p.ids["signing"], k.ID)
		p.marks = append(p.marks, k.ID, k.Key)
	}
	c := d.createChannel(`{"name":"`+tag+` chat","type":"chat","url":"https://chat.example.com/`+tag+`"}`, as(key))
	p.ids["channels"] = []string{c.ID}
	s := d.createSequence(fmt.Sprintf(weekdaysParis, tag+"-etl"), as(key))
	p.ids["sequences"], p.sequence = []string{s.ID}, s.ID
	_, err := d.q.OpenListenerPresence(d.ctx, store.OpenListenerPresenceParams{
		GatewayID: "gw-" + tag, Sockets: 2, WindowSeconds: 300, ProjectID: id,
	})
	require.NoError(d.t, err)
	// A bulk job that another gateway's runner holds, so that it stays
	// running and a cancel that got through would show.
	job, err := d.tq.InsertLeasedBulkJobForTest(d.ctx, storetest.InsertLeasedBulkJobForTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: id, StartTime: bulkDay, EndTime: bulkDay.Add(24 * time.Hour), Total: 4,
	})
	require.NoError(d.t, err)
	p.ids["bulk-jobs"] = []string{job.ID.String()}
	p.marks = append(p.marks, p.ids["hooks"]...)
	p.marks = append(p.marks, c.ID, s.ID, job.ID.String())
	return p
}

// walkState is what a route of the dashboard could change in a project.
type walkState struct {
	project     projectJSON
	apiKeys     []apiKeyJSON
	signingKeys []signingKeyJSON
	channels    []channelJSON
	sequence    sequenceJSON
	sequences   []string
	triggers    int
	hooks       []storetest.Hook
	listeners   []string
	bulkJobs    []bulkJobJSON
}

func (d dashBundle) walkState(p walkProject) walkState {
	d.t.Helper()
	s := walkState{
		project:     d.do(http.MethodGet, "/v1/project", nil, as(p.key)).project(d.t),
		apiKeys:     d.apiKeys(as(p.key)),
		signingKeys: d.signingKeys(as(p.key)),
		channels:    data[[]channelJSON](d.t, d.do(http.MethodGet, "/v1/channels", nil, as(p.key)), http.StatusOK),
		sequence:    d.sequence(p.sequence, as(p.key)),
	}
	s.bulkJobs = d.bulkJobs("", as(p.key)).Data
	list, _ := d.sequencePage("/v1/sequences", as(p.key))
	for _, seq := range list {
		s.sequences = append(s.sequences, seq.Name)
	}
	// A key's last use is recorded beside the request that used it
	// (apikey.Verifier), so the reads above may land it after this
	// snapshot: bookkeeping of the test's own requests, not a change a
	// route made.
	for i := range s.apiKeys {
		s.apiKeys[i].LastUsedAt = ""
	}
	triggers, err := d.tq.ListSequenceTriggersForTest(d.ctx, uuid.MustParse(p.sequence))
	require.NoError(d.t, err)
	s.triggers = len(triggers)
	s.hooks, err = d.tq.ListProjectHooksForBulkTest(d.ctx, p.id)
	require.NoError(d.t, err)
	// The presence's times move with its gateway's heartbeat: who is
	// listening is what a route could change.
	rows, err := d.tq.ListListenerPresence(d.ctx, p.id)
	require.NoError(d.t, err)
	for _, r := range rows {
		s.listeners = append(s.listeners, fmt.Sprintf("%s:%d", r.GatewayID, r.Sockets))
	}
	return s
}

// walkPaths are the paths of route r in project, every wildcard filled
// with each of ids' objects and each real action.
func walkPaths(t *testing.T, r dashboard.Route, project string, ids map[string][]string) []string {
	t.Helper()
	paths := []string{""}
	segments := strings.Split(strings.TrimPrefix(r.Path, "/"), "/")
	parent := "" // the last literal segment: what {id} and {action} belong to
	for _, seg := range segments {
		var values []string
		switch seg {
		case "{project}":
			values = []string{project}
		case "{id}":
			values = ids[parent]
			require.NotEmpty(t, values, "%s %s: no object for {id} after %q: add one to the walk", r.Method, r.Path, parent)
		case "{action}":
			values = walkActions[parent]
			require.NotEmpty(t, values, "%s %s: no actions for {action} after %q: add them to the walk", r.Method, r.Path, parent)
		case "{$}":
			values = []string{""}
		default:
			require.False(t, strings.HasPrefix(seg, "{"), "%s %s: wildcard %s is not known to the walk", r.Method, r.Path, seg)
			values, parent = []string{seg}, seg
		}
		var next []string
		for _, p := range paths {
			for _, v := range values {
				next = append(next, p+"/"+v)
			}
		}
		paths = next
	}
	return paths
}

// walkForm is the form every post of a walk sends: the fields of every
// action, valid, so that a route that let the request through would act.
func walkForm(token string) url.Values {
	return url.Values{
		"csrf": {token}, "name": {"walked"}, "grace_hours": {"2"},
		"startTime": {bulkDay.Format(time.RFC3339)}, "endTime": {bulkDay.Add(24 * time.Hour).Format(time.RFC3339)},
		"limit": {"1000"},
		// A hook (the create form, the test delivery).
		"path": {"/walked"}, "data": {"{}"}, "when": {"now"},
		// A sequence (create, edit).
		"kind": {"every"}, "every": {"1h"}, "catchUp": {"latest"}, "overlap": {"allow"},
		"steps": {`[{"name":"walked","path":"/walked","data":{}}]`},
		// A channel (create, edit).
		"type": {"webhook"}, "url": {"https://walked.example.com/alerts"}, "enabled": {"on"}, "events": {"hook.failed"},
	}
}

func isProjectRoute(r dashboard.Route) bool {
	return r.Kind == dashboard.KindProjectPage || r.Kind == dashboard.KindProjectAction
}

func hasID(r dashboard.Route) bool { return strings.Contains(r.Path, "/{id}") }

func requireNothingOf(t *testing.T, p walkProject, page page, what string) {
	t.Helper()
	for _, m := range p.marks {
		require.NotContains(t, page.body, m, "%s shows %q of the other project", what, m)
	}
}

// TestDashboardIsolationWalk walks every route of the dashboard as an
// owner of project A: with project B's id and B's objects, every project
// route is a 404 showing nothing of B; with A's id and B's objects too;
// A's own pages and actions (bulk actions over B's time range included)
// show and touch nothing of B; and afterwards B is exactly as it was.
func TestDashboardIsolationWalk(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Zq7beta project", "zq7beta.example.com")
	require.NoError(t, err)
	a := d.seedWalkProject(d.project, d.creds.APIKey, "walkalpha")
	b := d.seedWalkProject(uuid.MustParse(other.ProjectID), other.APIKey, "zq7beta")
	before, aBefore := d.walkState(b), d.walkState(a)
	br := d.signedIn(account.Owner)
	token := br.csrf()
	send := func(method, path string) page {
		t.Helper()
		if method == http.MethodGet {
			return br.get(path)
		}
		return br.do(method, path, walkForm(token))
	}

	routes := dashboard.New(dashboard.Deps{}).Routes()
	walked := 0
	for _, r := range routes {
		if !isProjectRoute(r) {
			if r.Method == http.MethodGet || r.Method == "" {
				path := walkPaths(t, r, "", nil)[0]
				requireNothingOf(t, b, br.get(path), path)
				walked++
				continue
			}
			require.True(t, sessionRoutes[r.Method+" "+r.Path], "%s %s changes state outside a project: add it to the walk", r.Method, r.Path)
			continue
		}
		// B's project with B's objects, and A's project with B's objects.
		targets := []string{b.id.String()}
		if hasID(r) {
			targets = append(targets, a.id.String())
		}
		for _, project := range targets {
			for _, path := range walkPaths(t, r, project, b.ids) {
				p := send(r.Method, path)
				require.Equal(t, http.StatusNotFound, p.status, "%s %s", r.Method, path)
				requireNothingOf(t, b, p, r.Method+" "+path)
				walked++
			}
		}
		// A's own routes with A's objects: nothing of B shows or changes.
		if hasID(r) {
			continue
		}
		for _, path := range walkPaths(t, r, a.id.String(), a.ids) {
			p := send(r.Method, path)
			if m := bulkCount.FindStringSubmatch(p.body); m != nil {
				form := walkForm(token)
				form.Set("confirm", "1")
				form.Set("count", m[1])
				p = br.do(r.Method, path, form)
			}
			require.Less(t, p.status, http.StatusInternalServerError, "%s %s: %s", r.Method, path, p.body)
			requireNothingOf(t, b, p, r.Method+" "+path)
			walked++
		}
	}
	require.Greater(t, walked, len(routes), "every route was walked, most with several objects")
	require.Equal(t, before, d.walkState(b), "project B is as it was")

	// The control that the walk's forms act where they are allowed: the
	// bulk actions over the same day changed A's hooks.
	require.NotEqual(t, aBefore.hooks, d.walkState(a).hooks, "A's hooks")
}

// TestDashboardViewerWalk posts to every ProjectAction route of project A
// with A's own objects, a valid CSRF token and a valid form: a viewer gets
// 403 from the role check on every one, a member on the owners' ones, and
// A is unchanged. Every state-changing project route must be a
// ProjectAction (the one that checks the role).
func TestDashboardViewerWalk(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	a := d.seedWalkProject(d.project, d.creds.APIKey, "walkalpha")
	before := d.walkState(a)
	refusers := map[account.Role]*browser{account.Viewer: d.signedIn(account.Viewer), account.Member: d.signedIn(account.Member)}
	tokens := map[account.Role]string{}
	for role, br := range refusers {
		tokens[role] = br.csrf()
	}

	actions := 0
	for _, r := range dashboard.New(dashboard.Deps{}).Routes() {
		if !isProjectRoute(r) {
			continue
		}
		if r.Method != http.MethodGet {
			require.Equal(t, dashboard.KindProjectAction, r.Kind, "%s %s changes state without a role check", r.Method, r.Path)
		}
		for _, path := range walkPaths(t, r, a.id.String(), a.ids) {
			if r.Kind == dashboard.KindProjectPage {
				require.Equal(t, http.StatusOK, refusers[account.Viewer].get(path).status, path)
				continue
			}
			roles := []account.Role{account.Viewer}
			if r.MinRole == account.Owner {
				roles = append(roles, account.Member)
			}
			for _, role := range roles {
				p := refusers[role].do(r.Method, path, walkForm(tokens[role]))
				require.Equal(t, http.StatusForbidden, p.status, "%s %s %s", role, r.Method, path)
				require.Contains(t, p.body, "Your role in this project does not allow this.", "%s %s %s: refused by the role, not the token", role, r.Method, path)
				actions++
			}
		}
	}
	require.Greater(t, actions, 20, "every action route, with every object and action")
	require.Equal(t, before, d.walkState(a), "project A is as it was")
}

package app_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/dashboard"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// dashBundle is a gateway with its dashboard, the account service on its
// database (to create users as the admin command does) and the project's id.
type dashBundle struct {
	bundle
	acc     *account.Service
	project uuid.UUID
}

func setupDashboard(t *testing.T, configure ...func(*app.Config)) dashBundle {
	t.Helper()
	var dcfg account.Config
	configure = append(configure, func(c *app.Config) { dcfg = c.Dashboard })
	b := setup(t, configure...)
	return dashBundle{bundle: b, acc: account.NewService(b.q, dcfg), project: uuid.MustParse(b.creds.ProjectID)}
}

// user creates a member of the bundle's project with a password.
func (d dashBundle) user(role account.Role) (account.User, string) {
	d.t.Helper()
	u, err := d.acc.AddMember(d.ctx, uuid.NewString()[:8]+"@Example.com", d.project, role)
	require.NoError(d.t, err)
	password := "correct horse " + uuid.NewString()[:8]
	require.NoError(d.t, d.acc.SetPassword(d.ctx, u.ID, password))
	return u, password
}

// browser is a client with a cookie jar that does not follow redirects.
type browser struct {
	d      dashBundle
	client *http.Client
}

func (d dashBundle) browser() *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(d.t, err)
	return &browser{d: d, client: &http.Client{
		Transport: d.raw.Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, mods ...func(*http.Request)) page {
	b.d.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(b.d.ctx, method, b.d.base+path, body)
	require.NoError(b.d.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, m := range mods {
		m(req)
	}
	resp, err := b.client.Do(req)
	require.NoError(b.d.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.d.t, err)
	return page{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

func (b *browser) get(path string) page { return b.do(http.MethodGet, path, nil) }

func (b *browser) signIn(email, password string, mods ...func(*http.Request)) page {
	return b.do(http.MethodPost, "/dashboard/signin", url.Values{"email": {email}, "password": {password}}, mods...)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of a signed-in page.
func (b *browser) csrf() string {
	b.d.t.Helper()
	p := b.get("/dashboard/p/" + b.d.project.String())
	require.Equal(b.d.t, http.StatusOK, p.status)
	m := csrfField.FindStringSubmatch(p.body)
	require.NotNil(b.d.t, m, "no CSRF field on the page")
	return m[1]
}

func (d dashBundle) overviewPath() string { return "/dashboard/p/" + d.project.String() }

func requireSignedOut(t *testing.T, p page) {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, p.status)
	require.True(t, strings.HasPrefix(p.header.Get("Location"), "/dashboard/signin"), p.header.Get("Location"))
}

func TestDashboardSignIn(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	u, password := d.user(account.Owner)
	br := d.browser()

	requireSignedOut(t, br.get("/dashboard"))
	p := br.signIn(strings.ToUpper(u.Email), password)
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/dashboard", p.header.Get("Location"))
	cookie := p.header.Get("Set-Cookie")
	for _, attr := range []string{"sundial_session=", "Path=/dashboard", "HttpOnly", "SameSite=Lax"} {
		require.Contains(t, cookie, attr)
	}
	require.NotContains(t, cookie, "Secure") // the public URL is not https

	// One project: the list is its overview.
	p = br.get("/dashboard")
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, d.overviewPath(), p.header.Get("Location"))
	p = br.get(d.overviewPath())
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "<h1>Acme</h1>")
	require.Contains(t, p.body, "hooks.example.com")
	require.Contains(t, p.body, "0 of 100000 hooks created")

	// A second project makes the list a page.
	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Beta", "beta.example.com")
	require.NoError(t, err)
	_, err = d.acc.AddMember(d.ctx, u.Email, uuid.MustParse(other.ProjectID), account.Viewer)
	require.NoError(t, err)
	p = br.get("/dashboard")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "Acme")
	require.Contains(t, p.body, "Beta")
	require.NotContains(t, d.logs.String(), password)
}

func TestDashboardWrongEmailAndWrongPasswordLookTheSame(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	u, _ := d.user(account.Owner)
	br := d.browser()

	wrongPassword := br.signIn(u.Email, "not the password at all")
	unknown := br.signIn("nobody@example.com", "not the password at all")
	require.Equal(t, http.StatusUnauthorized, wrongPassword.status)
	require.Equal(t, wrongPassword.status, unknown.status)
	require.Contains(t, wrongPassword.body, "Wrong e-mail or password.")
	// The pages differ only in the e-mail given back in the form.
	require.Equal(t, strings.ReplaceAll(wrongPassword.body, u.Email, "E"), strings.ReplaceAll(unknown.body, "nobody@example.com", "E"))
	require.Empty(t, wrongPassword.header.Get("Set-Cookie"))
	requireSignedOut(t, br.get("/dashboard"))
}

func TestDashboardThrottlesPerAddress(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	u, password := d.user(account.Owner)
	br := d.browser()
	// Five failures for five accounts from one address...
	for i := range 5 {
		p := br.signIn("someone"+string(rune('a'+i))+"@example.com", "wrong password")
		require.Equal(t, http.StatusUnauthorized, p.status)
	}
	// ...refuse the address, even with the right password.
	p := br.signIn(u.Email, password)
	require.Equal(t, http.StatusTooManyRequests, p.status)
	requireRetryAfter(t, p, 15*time.Minute)
	require.Contains(t, p.body, "Too many failed sign-ins.")
}

func requireRetryAfter(t *testing.T, p page, window time.Duration) {
	t.Helper()
	secs, err := time.ParseDuration(p.header.Get("Retry-After") + "s")
	require.NoError(t, err, p.header.Get("Retry-After"))
	require.Greater(t, secs, window-time.Minute)
	require.LessOrEqual(t, secs, window)
}

// TestDashboardFailuresElsewhereDoNotLockTheOwnerOut: failures for an
// account from other addresses refuse those addresses, not the account's
// owner signing in from their own; and a success does not clear the
// failing address's count.
func TestDashboardFailuresElsewhereDoNotLockTheOwnerOut(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t, func(c *app.Config) { c.TrustedProxies = []string{"127.0.0.1/32", "::1/128"} })
	u, password := d.user(account.Owner)
	br := d.browser()
	for i := range 10 {
		require.Equal(t, http.StatusUnauthorized, br.signIn(u.Email, "wrong password", header("X-Forwarded-For", "203.0.113."+strconv.Itoa(i+1))).status)
	}
	require.Equal(t, http.StatusSeeOther, br.signIn(u.Email, password, header("X-Forwarded-For", "198.51.100.2")).status,
		"the owner signs in from their own address")

	guesser := header("X-Forwarded-For", "192.0.2.9")
	for range 4 {
		require.Equal(t, http.StatusUnauthorized, br.signIn(u.Email, "wrong password", guesser).status)
	}
	other, otherPassword := d.user(account.Viewer)
	require.Equal(t, http.StatusSeeOther, br.signIn(other.Email, otherPassword, guesser).status, "its own account, from the guessing address")
	require.Equal(t, http.StatusUnauthorized, br.signIn(u.Email, "wrong password", guesser).status, "the fifth failure")
	p := br.signIn(u.Email, password, guesser)
	require.Equal(t, http.StatusTooManyRequests, p.status, "the success did not clear the address's count")
	requireRetryAfter(t, p, 15*time.Minute)
}

func ageSessions(d dashBundle, userID uuid.UUID, age time.Duration) {
	require.NoError(d.t, d.tq.AgeSessions(d.ctx, storetest.AgeSessionsParams{
		UserID: userID, Age: pgtype.Interval{Microseconds: age.Microseconds(), Valid: true},
	}))
}

func TestDashboardSessionIdleExpiry(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t, func(c *app.Config) { c.Dashboard.SessionIdle = time.Hour })
	u, password := d.user(account.Owner)
	br := d.browser()
	require.Equal(t, http.StatusSeeOther, br.signIn(u.Email, password).status)

	// Used 50 minutes ago: alive, and the use moves last_seen_at.
	ageSessions(d, u.ID, 50*time.Minute)
	require.Equal(t, http.StatusOK, br.get(d.overviewPath()).status)
	ageSessions(d, u.ID, 50*time.Minute)
	require.Equal(t, http.StatusOK, br.get(d.overviewPath()).status)
	// Unused for more than an hour: ended.
	ageSessions(d, u.ID, 61*time.Minute)
	requireSignedOut(t, br.get(d.overviewPath()))
}

func TestDashboardSessionAbsoluteExpiry(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t, func(c *app.Config) { c.Dashboard.SessionAbsolute = time.Hour })
	u, password := d.user(account.Owner)
	br := d.browser()
	require.Equal(t, http.StatusSeeOther, br.signIn(u.Email, password).status)
	ageSessions(d, u.ID, 50*time.Minute)
	require.Equal(t, http.StatusOK, br.get(d.overviewPath()).status)
	// Used a moment ago, but signed in more than an hour ago.
	ageSessions(d, u.ID, 11*time.Minute)
	requireSignedOut(t, br.get(d.overviewPath()))
}

func TestDashboardSignOut(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	u, password := d.user(account.Owner)
	laptop, phone, tablet := d.browser(), d.browser(), d.browser()
	for _, br := range []*browser{laptop, phone, tablet} {
		require.Equal(t, http.StatusSeeOther, br.signIn(u.Email, password).status)
	}
	// Sign-out ends one session.
	p := tablet.do(http.MethodPost, "/dashboard/signout", url.Values{"csrf": {tablet.csrf()}})
	requireSignedOut(t, p)
	requireSignedOut(t, tablet.get(d.overviewPath()))
	require.Equal(t, http.StatusOK, phone.get(d.overviewPath()).status)

	// Sign-out everywhere ends the others.
	p = laptop.do(http.MethodPost, "/dashboard/signout-everywhere", url.Values{"csrf": {laptop.csrf()}})
	requireSignedOut(t, p)
	requireSignedOut(t, laptop.get(d.overviewPath()))
	requireSignedOut(t, phone.get(d.overviewPath()))
	n, err := d.tq.CountUserSessions(d.ctx, u.ID)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestDashboardSetPasswordLink(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	u, err := d.acc.AddMember(d.ctx, "new@example.com", d.project, account.Member)
	require.NoError(t, err)
	token, err := d.acc.NewPasswordLink(d.ctx, u.ID)
	require.NoError(t, err)
	br := d.browser()

	// No password yet: signing in fails like a wrong password.
	require.Equal(t, http.StatusUnauthorized, br.signIn(u.Email, "anything at all").status)

	p := br.get("/dashboard/set-password?token=" + token)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "new@example.com")
	p = br.do(http.MethodPost, "/dashboard/set-password", url.Values{"token": {token}, "password": {"short"}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "password: want 10 to 256 characters")

	p = br.do(http.MethodPost, "/dashboard/set-password", url.Values{"token": {token}, "password": {"a new long password"}})
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, http.StatusOK, br.get(d.overviewPath()).status) // signed in by the link

	// Once only.
	again := d.browser()
	require.Equal(t, http.StatusNotFound, again.get("/dashboard/set-password?token="+token).status)
	p = again.do(http.MethodPost, "/dashboard/set-password", url.Values{"token": {token}, "password": {"another long password"}})
	require.Equal(t, http.StatusNotFound, p.status)
	require.Equal(t, http.StatusSeeOther, again.signIn(u.Email, "a new long password").status)
	require.NotContains(t, d.logs.String(), token)

	// A new link ends the sessions signed in with the old password.
	reset, err := d.acc.NewPasswordLink(d.ctx, u.ID)
	require.NoError(t, err)
	p = d.browser().do(http.MethodPost, "/dashboard/set-password", url.Values{"token": {reset}, "password": {"the third long password"}})
	require.Equal(t, http.StatusSeeOther, p.status)
	requireSignedOut(t, again.get(d.overviewPath()))
	require.Equal(t, http.StatusUnauthorized, again.signIn(u.Email, "a new long password").status)

	// An expired link is refused.
	expired, err := d.acc.NewPasswordLink(d.ctx, u.ID)
	require.NoError(t, err)
	require.NoError(t, d.tq.ExpirePasswordTokens(d.ctx, u.ID))
	require.Equal(t, http.StatusNotFound, again.get("/dashboard/set-password?token="+expired).status)
	p = again.do(http.MethodPost, "/dashboard/set-password", url.Values{"token": {expired}, "password": {"another long password"}})
	require.Equal(t, http.StatusNotFound, p.status)
}

func (d dashBundle) projectName() string {
	d.t.Helper()
	p, err := d.acc.Membership(d.ctx, d.mustOwner(), d.project)
	require.NoError(d.t, err)
	return p.Name
}

// mustOwner is a user to read the project with.
func (d dashBundle) mustOwner() uuid.UUID {
	u, err := d.acc.AddMember(d.ctx, "reader@example.com", d.project, account.Owner)
	require.NoError(d.t, err)
	return u.ID
}

func TestDashboardRefusesCrossOriginAndMissingCSRF(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	u, password := d.user(account.Owner)
	br := d.browser()
	require.Equal(t, http.StatusSeeOther, br.signIn(u.Email, password).status)
	token := br.csrf()
	settings := d.overviewPath() + "/settings"

	for name, mod := range map[string]func(*http.Request){
		"Sec-Fetch-Site": header("Sec-Fetch-Site", "cross-site"),
		"Origin":         header("Origin", "https://evil.example"),
	} {
		p := br.do(http.MethodPost, settings, url.Values{"csrf": {token}, "name": {"Hijacked"}}, mod)
		require.Equal(t, http.StatusForbidden, p.status, name)
	}
	require.Equal(t, http.StatusForbidden, br.do(http.MethodPost, settings, url.Values{"name": {"Hijacked"}}).status)
	require.Equal(t, http.StatusForbidden, br.do(http.MethodPost, settings, url.Values{"csrf": {"x" + token}, "name": {"Hijacked"}}).status)
	// A sign-out needs the token too.
	require.Equal(t, http.StatusForbidden, br.do(http.MethodPost, "/dashboard/signout", url.Values{}).status)
	require.Equal(t, "Acme", d.projectName())

	// Same origin with the token: done.
	p := br.do(http.MethodPost, settings, url.Values{"csrf": {token}, "name": {"Renamed"}}, header("Sec-Fetch-Site", "same-origin"))
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "Renamed", d.projectName())
	// The htmx header carries the token as well.
	p = br.do(http.MethodPost, settings, url.Values{"name": {"Again"}}, header(dashboard.CSRFHeader, token))
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "Again", d.projectName())
}

func TestDashboardViewerCannotChangeAnything(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	viewer, password := d.user(account.Viewer)
	br := d.browser()
	require.Equal(t, http.StatusSeeOther, br.signIn(viewer.Email, password).status)
	p := br.get(d.overviewPath())
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, "Rename") // no form it could not use
	p = br.do(http.MethodPost, d.overviewPath()+"/settings", url.Values{"csrf": {br.csrf()}, "name": {"Viewer was here"}})
	require.Equal(t, http.StatusForbidden, p.status)
	require.Equal(t, "Acme", d.projectName())

	member, password := d.user(account.Member)
	mb := d.browser()
	require.Equal(t, http.StatusSeeOther, mb.signIn(member.Email, password).status)
	p = mb.do(http.MethodPost, d.overviewPath()+"/settings", url.Values{"csrf": {mb.csrf()}, "name": {""}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "name")
}

func TestDashboardHidesOtherProjects(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	u, password := d.user(account.Owner)
	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Secret", "secret.example.com")
	require.NoError(t, err)
	br := d.browser()
	require.Equal(t, http.StatusSeeOther, br.signIn(u.Email, password).status)
	token := br.csrf()

	for _, path := range []string{"/dashboard/p/" + other.ProjectID, "/dashboard/p/" + uuid.NewString(), "/dashboard/p/not-a-uuid", "/dashboard/nowhere"} {
		p := br.get(path)
		require.Equal(t, http.StatusNotFound, p.status, path)
		require.NotContains(t, p.body, "Secret")
	}
	p := br.do(http.MethodPost, "/dashboard/p/"+other.ProjectID+"/settings", url.Values{"csrf": {token}, "name": {"Mine"}})
	require.Equal(t, http.StatusNotFound, p.status)
}

func TestDashboardEscapesProjectName(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	u, password := d.user(account.Owner)
	br := d.browser()
	require.Equal(t, http.StatusSeeOther, br.signIn(u.Email, password).status)
	evil := `<script>alert("x")</script>`
	p := br.do(http.MethodPost, d.overviewPath()+"/settings", url.Values{"csrf": {br.csrf()}, "name": {evil}})
	require.Equal(t, http.StatusSeeOther, p.status)
	p = br.get(d.overviewPath())
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, "<script>alert")
	require.Contains(t, p.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
}

func TestDashboardSecurityHeaders(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	u, password := d.user(account.Owner)
	anon, br := d.browser(), d.browser()
	require.Equal(t, http.StatusSeeOther, br.signIn(u.Email, password).status)
	const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	pages := map[string]page{
		"signin":        anon.get("/dashboard/signin"),
		"set-password":  anon.get("/dashboard/set-password?token=nope"),
		"redirect":      anon.get("/dashboard"),
		"failed signin": anon.signIn("x@example.com", "wrong password"),
		"overview":      br.get(d.overviewPath()),
		"not found":     br.get("/dashboard/p/" + uuid.NewString()),
		"forbidden":     br.do(http.MethodPost, d.overviewPath()+"/settings", url.Values{}),
	}
	for name, p := range pages {
		require.Equal(t, csp, p.header.Get("Content-Security-Policy"), name)
		require.Equal(t, "nosniff", p.header.Get("X-Content-Type-Options"), name)
		require.Equal(t, "same-origin", p.header.Get("Referrer-Policy"), name)
		require.Equal(t, "no-store", p.header.Get("Cache-Control"), name)
		require.NotContains(t, p.body, "style=", name)
	}
	overview := pages["overview"]
	require.Contains(t, overview.header.Get("Content-Type"), "text/html")

	// The static files the layout links, with their types and a long cache.
	links := regexp.MustCompile(`(?:href|src)="(/dashboard/static/[^"]+)"`).FindAllStringSubmatch(overview.body, -1)
	require.Len(t, links, 3)
	types := map[string]string{}
	for _, l := range links {
		p := anon.get(strings.ReplaceAll(l[1], "&amp;", "&"))
		require.Equal(t, http.StatusOK, p.status, l[1])
		require.Equal(t, "public, max-age=31536000, immutable", p.header.Get("Cache-Control"))
		types[l[1][:strings.Index(l[1], "?")]] = p.header.Get("Content-Type")
	}
	require.Equal(t, map[string]string{
		"/dashboard/static/dashboard.css":      "text/css; charset=utf-8",
		"/dashboard/static/vendor/htmx.min.js": "text/javascript; charset=utf-8",
		"/dashboard/static/localtime.js":       "text/javascript; charset=utf-8",
	}, types)
	require.Equal(t, http.StatusNotFound, anon.get("/dashboard/static/vendor/vendor.lock").status)
}

func TestDashboardSweepDeletesEndedSessionsOnly(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t, func(c *app.Config) { c.Dashboard.SessionIdle = time.Hour })
	gone, password := d.user(account.Owner)
	kept, keptPassword := d.user(account.Owner)
	require.Equal(t, http.StatusSeeOther, d.browser().signIn(gone.Email, password).status)
	br := d.browser()
	require.Equal(t, http.StatusSeeOther, br.signIn(kept.Email, keptPassword).status)
	ageSessions(d, gone.ID, 2*time.Hour)

	n, err := account.NewSweeper(d.acc, slog.New(slog.DiscardHandler)).Sweep(d.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	left, err := d.tq.CountUserSessions(d.ctx, gone.ID)
	require.NoError(t, err)
	require.Zero(t, left)
	require.Equal(t, http.StatusOK, br.get(d.overviewPath()).status)
}

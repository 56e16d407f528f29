package browser

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

const (
	signinForm = `form[action="/dashboard/signin"]`
	signoutBtn = `form[action="/dashboard/signout"] button`
)

// TestSignIn covers the foundation's pages in the browser. The subtests
// share one gateway (a setup and a sign-in cost seconds under -race, and
// the package must stay fast); each has its own tab, so its own session.
func TestSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})

	// Signs in through the form, lands on the overview, renames the project
	// on the settings page, reached by the project's navigation (a
	// CSRF-checked post from a real browser), and signs out.
	t.Run("form-rename-signout", func(t *testing.T) {
		t.Parallel()
		tb := openTab(t, b.base)
		tb.open("/dashboard")
		tb.at("signin", "/dashboard/signin", signinForm)
		tb.accessible("signin")
		tb.signIn(b.email, b.password)
		// The only project's overview, straight away.
		tb.at("overview", b.overviewPath(), "main h1")
		require.Contains(t, tb.text("header .who"), b.email)

		tb.click(`nav.project a[href$="/settings"]`)
		tb.at("settings", b.overviewPath()+"/settings", "#name")
		tb.typeInto("#name", "renamed in a browser")
		tb.click(`form[action$="/settings"] button[type=submit]`)
		// The layout's project switcher names the project on every page.
		tb.waitText("details.switcher summary", "renamed in a browser")
		tb.open(b.overviewPath())
		tb.at("renamed", b.overviewPath(), "main h1")
		require.Equal(t, "renamed in a browser", tb.text("main h1"))

		tb.click(signoutBtn)
		tb.at("signed-out", "/dashboard/signin", signinForm)
		// The session is gone: the overview sends back to the sign-in page.
		tb.open(b.overviewPath())
		tb.at("overview-signed-out", "/dashboard/signin", signinForm)
	})

	// The form comes back with the error and the e-mail, and no session.
	t.Run("wrong-password", func(t *testing.T) {
		t.Parallel()
		tb := openTab(t, b.base)
		tb.open("/dashboard/signin")
		tb.at("signin", "/dashboard/signin", signinForm)
		tb.signIn(b.email, "not the password")
		tb.at("wrong-password", "/dashboard/signin", `p.error[role=alert]`)
		require.Equal(t, "Wrong e-mail or password.", tb.text(`p.error[role=alert]`))
		require.Equal(t, b.email, eval[string](tb, `document.querySelector("#email").value`))
		require.Empty(t, eval[string](tb, `document.querySelector("#password").value`))

		tb.open(b.overviewPath())
		tb.at("overview-refused", "/dashboard/signin", signinForm)
	})

	// Signed in, the stylesheet and htmx load under the page's
	// Content-Security-Policy (and openTab's cleanup fails the test on any
	// refusal the console reports, on every page of every test).
	t.Run("policy-refuses-nothing-needed", func(t *testing.T) {
		t.Parallel()
		tb := signedIn(t, b)
		// A refused stylesheet is not in document.styleSheets.
		require.Positive(t, eval[int](tb, `Array.from(document.styleSheets).filter(s => s.href && s.href.includes("/dashboard/static/")).length`))
		// htmx is deferred: wait for it, never sleep.
		require.Eventually(t, func() bool { return eval[bool](tb, `typeof window.htmx === "object"`) },
			actionTimeout, 20*time.Millisecond, "htmx never loaded")
		require.Empty(t, tb.refusals())
	})

	// Every page of the project's navigation opens from its link, marked
	// as the current one, with nothing refused (openTab's cleanup).
	t.Run("every-page-of-the-nav", func(t *testing.T) {
		t.Parallel()
		tb := signedIn(t, b)
		for _, label := range []string{"Hooks", "Bulk jobs", "Sequences", "Channels", "Keys", "Listeners", "Settings", "Overview"} {
			tb.clickXPath(`//nav[contains(@class, "project")]/a[normalize-space()="` + label + `"]`)
			tb.waitText(`nav.project a[aria-current="page"]`, label)
			tb.at(strings.ToLower(label), "", "main h1")
		}
	})

	// The control of the check above: an image from another origin, which
	// img-src refuses, is reported.
	t.Run("refusal-is-seen", func(t *testing.T) {
		t.Parallel()
		tb := openTab(t, b.base)
		tb.allowRefusals = true
		tb.open("/dashboard/signin")
		tb.at("signin", "/dashboard/signin", signinForm)
		eval[bool](tb, `(() => { const i = document.createElement("img"); i.src = "https://refused.invalid/x.png"; document.body.append(i); return true })()`)
		require.Eventually(t, func() bool { return len(tb.refusals()) > 0 }, actionTimeout, 20*time.Millisecond,
			"the console reported no refusal of an image from another origin")
		require.Contains(t, tb.refusals()[0], "img-src")
	})

	// A project alert's link (the notifier's /dashboard/p/{project}), opened
	// while signed out, goes to the sign-in page, then to the link's page,
	// query and all.
	t.Run("alert-link", func(t *testing.T) {
		t.Parallel()
		tb := openTab(t, b.base)
		link := b.overviewPath() + "?range=24h"
		tb.open(link)
		tb.at("signin", "/dashboard/signin", signinForm)
		require.Equal(t, link, eval[string](tb, `document.querySelector("input[name=next]").value`))
		tb.signIn(b.email, b.password)
		tb.at("overview", b.overviewPath(), "main h1")
		require.Equal(t, link, tb.path())
	})

	// A sign-in link whose next points to another site lands on the
	// dashboard: no open redirect.
	for name, next := range map[string]string{
		"absolute":        "https://evil.example/",
		"scheme-relative": "//evil.example/dashboard",
		"backslash":       "/dashboard/\\evil.example",
	} {
		t.Run("next-"+name, func(t *testing.T) {
			t.Parallel()
			tb := openTab(t, b.base)
			tb.open("/dashboard/signin?next=" + url.QueryEscape(next))
			tb.at("signin", "/dashboard/signin", signinForm)
			tb.signIn(b.email, b.password)
			tb.at("landed", b.overviewPath(), "main h1")
			require.Equal(t, b.base+b.overviewPath(), run(tb, "location", chromedp.Location()))
		})
	}
}

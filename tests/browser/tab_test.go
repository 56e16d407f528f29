package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// actionTimeout bounds each step of a test in the browser (a navigation, a
// wait for an element, a screenshot).
const actionTimeout = 15 * time.Second

// screenshotDir is where the screenshots go: $SUNDIAL_TEST_OUTPUT/screenshots
// when set, else testdata/output/screenshots in this package (gitignored).
func screenshotDir() string {
	dir := filepath.Join("testdata", "output", "screenshots")
	if out := os.Getenv("SUNDIAL_TEST_OUTPUT"); out != "" {
		dir = filepath.Join(out, "screenshots")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// tab is one test's tab, in a browser context of its own (its own cookies:
// the tests' gateways all listen on 127.0.0.1, and cookies ignore ports).
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu sync.Mutex
	// messages are the console's messages, logged when the test fails.
	messages []string
	// refused are the messages of what the page's CSP refused, and the
	// page's uncaught exceptions.
	refused []string
	// allowRefusals is set by the test that provokes a refusal.
	allowRefusals bool
	shots         int
}

// openTab opens a tab on the shared browser for a gateway at base. At the
// end of the test it checks that the CSP refused nothing and no script
// failed on any page the test visited.
func openTab(t *testing.T, base string) *tab {
	t.Helper()
	bctx, err := sharedBrowser()
	require.NoError(t, err)
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	tb := &tab{t: t, ctx: ctx, base: base}
	// Listen attaches the tab; bounded here, as its context must not be a
	// timeout's (the tab would close with it).
	require.NoError(t, within(startTimeout, cancel, func() error { return chromedp.Listen(ctx, tb.record) }), "opening a tab")
	t.Cleanup(func() {
		if t.Failed() {
			tb.saveFailed()
		}
		cancel()
		tb.mu.Lock()
		defer tb.mu.Unlock()
		if !tb.allowRefusals && len(tb.refused) > 0 {
			t.Errorf("the browser refused or failed:\n%s", strings.Join(tb.refused, "\n"))
		}
		if t.Failed() && len(tb.messages) > 0 {
			t.Logf("the tab's console:\n%s", strings.Join(tb.messages, "\n"))
		}
	})
	return tb
}

// record keeps the console's messages. It runs on chromedp's reading
// goroutine: no command from here.
func (tb *tab) record(ev any) {
	var msg string
	refused := false
	switch ev := ev.(type) {
	case *log.EventEntryAdded:
		e := ev.Entry
		msg = fmt.Sprintf("%s %s: %s (%s)", e.Level, e.Source, e.Text, e.URL)
		refused = e.Source == log.EntrySourceSecurity || strings.Contains(e.Text, "Content Security Policy")
	case *runtime.EventConsoleAPICalled:
		parts := make([]string, 0, len(ev.Args))
		for _, a := range ev.Args {
			parts = append(parts, string(a.Value)+a.Description)
		}
		msg = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " "))
		refused = strings.Contains(msg, "Content Security Policy")
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = "exception: " + d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		refused = true
	default:
		return
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.messages = append(tb.messages, msg)
	if refused {
		tb.refused = append(tb.refused, msg)
	}
}

// refusals returns what the browser refused so far.
func (tb *tab) refusals() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.refused...)
}

// run runs one action, bounded by actionTimeout, and fails the test on
// its error.
func run[T any](tb *tab, what string, a chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, actionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		require.NoError(tb.t, err, "%s (at %s)", what, tb.lastURL())
	}
	return v
}

// lastURL is the tab's address, for failure messages.
func (tb *tab) lastURL() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 2*time.Second)
	defer cancel()
	u, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "unknown: " + err.Error()
	}
	return u
}

// do runs the steps, bounded by actionTimeout.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	run(tb, what, chromedp.Steps(steps...))
}

// open navigates to a path of the gateway.
func (tb *tab) open(path string) {
	tb.t.Helper()
	tb.do("open "+path, chromedp.Navigate(tb.base+path))
}

// at waits until the page shows sel, checks that the address's path is
// path (when not empty), and saves a full-page screenshot named page.
func (tb *tab) at(page, path, sel string) {
	tb.t.Helper()
	if path != "" {
		tb.waitPath(path)
	}
	tb.do("wait for "+sel+" on "+page, chromedp.WaitVisible(chromedp.CSS(sel)))
	tb.shot(page)
}

// waitPath waits until the tab's address has the path: a click's
// navigation ends after Click returns. The address is the browser's, not a
// script's (a script's context ends with its page).
func (tb *tab) waitPath(path string) {
	tb.t.Helper()
	var last string
	at := assert.Eventually(tb.t, func() bool {
		ctx, cancel := context.WithTimeout(tb.ctx, actionTimeout)
		defer cancel()
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			last = err.Error()
			return false
		}
		last = loc
		u, err := url.Parse(loc)
		return err == nil && u.Path == path
	}, actionTimeout, 20*time.Millisecond)
	if !at {
		require.FailNow(tb.t, "never at "+path, "last address: %s", last)
	}
}

// waitText waits until the text of the first element matching sel
// contains want (a page that answers a post on its own address: the old
// page's element is there until the new one replaces it).
func (tb *tab) waitText(sel, want string) {
	tb.t.Helper()
	var last string
	ok := assert.Eventually(tb.t, func() bool {
		ctx, cancel := context.WithTimeout(tb.ctx, actionTimeout)
		defer cancel()
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		last = got
		if err != nil {
			last = err.Error()
		}
		return err == nil && strings.Contains(got, want)
	}, actionTimeout, 20*time.Millisecond)
	if !ok {
		require.FailNow(tb.t, "no "+sel+" with "+want, "last: %s", last)
	}
}

// shot checks the page's accessibility and, when SUNDIAL_TEST_SCREENSHOTS
// is set, saves a full-page screenshot as TEST-NN-PAGE.png. A failed test
// saves the page it ended on whatever the setting (openTab).
func (tb *tab) shot(page string) {
	tb.t.Helper()
	tb.accessible(page)
	if os.Getenv("SUNDIAL_TEST_SCREENSHOTS") != "" {
		tb.save(page, run(tb, "screenshot "+page, chromedp.FullScreenshot(100)))
	}
}

// save writes a screenshot as TEST-NN-PAGE.png in screenshotDir.
func (tb *tab) save(page string, png []byte) {
	tb.t.Helper()
	dir := screenshotDir()
	require.NoError(tb.t, os.MkdirAll(dir, 0o755))
	tb.mu.Lock()
	tb.shots++
	n := tb.shots
	tb.mu.Unlock()
	name := fmt.Sprintf("%s-%02d-%s.png", strings.NewReplacer("/", "_", " ", "_").Replace(tb.t.Name()), n, page)
	require.NoError(tb.t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	tb.t.Logf("screenshot: %s", filepath.Join(dir, name))
}

// saveFailed saves the page a failed test ended on, best effort: the tab
// may be what failed.
func (tb *tab) saveFailed() {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("no screenshot of the failed page: %v", err)
		return
	}
	tb.save("failed", png)
}

// path is the tab's path and query.
func (tb *tab) path() string {
	tb.t.Helper()
	u, err := url.Parse(run(tb, "location", chromedp.Location()))
	require.NoError(tb.t, err)
	return u.RequestURI()
}

// text is the visible text of the first element matching sel.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return strings.TrimSpace(run(tb, "text of "+sel, chromedp.Text(chromedp.CSS(sel))))
}

// typeInto waits for a field and sets its value to v by script, with the
// input and change events a user's typing fires. Typing key by key tests
// only the browser, and on a loaded machine it outlasts actionTimeout.
func (tb *tab) typeInto(sel, v string) {
	tb.t.Helper()
	tb.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	quotedSel, err := json.Marshal(sel)
	require.NoError(tb.t, err)
	quotedV, err := json.Marshal(v)
	require.NoError(tb.t, err)
	require.True(tb.t, eval[bool](tb, fmt.Sprintf(`(() => {
		const e = document.querySelector(%s);
		e.focus();
		e.value = %s;
		e.dispatchEvent(new Event("input", {bubbles: true}));
		e.dispatchEvent(new Event("change", {bubbles: true}));
		return e.value === %s;
	})()`, quotedSel, quotedV, quotedV)), "fill %s", sel)
}

// click clicks the first element matching sel. A part of the page that
// htmx is still swapping in (the answer of the last click) can replace the
// element between the query and the click: Chrome then answers "Could not
// find node with given id", before any mouse event was sent, and the click
// is tried again on the element that replaced it, up to clickTries times.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(tb.ctx, actionTimeout)
		_, err := chromedp.Run(ctx, chromedp.Click(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			return
		}
		if try == clickTries || !strings.Contains(err.Error(), "Could not find node with given id") {
			require.NoError(tb.t, err, "click %s (at %s), try %d", sel, tb.lastURL(), try)
		}
	}
}

// clickTries bounds the tries of a click whose element was replaced.
const clickTries = 3

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	return run(tb, "evaluate "+expr, chromedp.Evaluate[T](expr))
}

// signIn fills the sign-in form the tab shows and submits it.
func (tb *tab) signIn(email, password string) {
	tb.t.Helper()
	tb.typeInto("#email", email)
	tb.typeInto("#password", password)
	tb.click(`form[action="/dashboard/signin"] button[type=submit]`)
}

// clickXPath clicks the first element an XPath query finds (a button in
// the table row of a given name, say).
func (tb *tab) clickXPath(xpath string) {
	tb.t.Helper()
	tb.do("click "+xpath, chromedp.Click(chromedp.Search(xpath)))
}

// signedIn opens a tab on b's gateway and signs its owner in: the tab is on
// the project's overview.
func signedIn(t *testing.T, b *bundle) *tab {
	t.Helper()
	tb := openTab(t, b.base)
	tb.open("/dashboard/signin")
	tb.at("signin", "/dashboard/signin", `form[action="/dashboard/signin"]`)
	tb.signIn(b.email, b.password)
	tb.at("overview", b.overviewPath(), "main h1")
	return tb
}

// textXPath is the visible text of the first element an XPath query finds.
func (tb *tab) textXPath(xpath string) string {
	tb.t.Helper()
	return strings.TrimSpace(run(tb, "text of "+xpath, chromedp.Text(chromedp.Search(xpath))))
}

// waitXPath waits until an element an XPath query finds is visible.
func (tb *tab) waitXPath(xpath string) {
	tb.t.Helper()
	tb.do("wait for "+xpath, chromedp.WaitVisible(chromedp.Search(xpath)))
}

// waitNoXPath waits until no element matches an XPath query.
func (tb *tab) waitNoXPath(xpath string) {
	tb.t.Helper()
	tb.do("wait for no "+xpath, chromedp.WaitNotPresent(chromedp.Search(xpath)))
}

package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// startTimeout bounds the start of the browser and of a tab.
const startTimeout = 30 * time.Second

// chromiumPath finds the browser: SUNDIAL_CHROMIUM, else Debian's
// /usr/bin/chromium, else chromium on PATH. A missing browser is an error,
// never a skip: a skipped browser test hides a broken dashboard.
func chromiumPath() (string, error) {
	if p := os.Getenv("SUNDIAL_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("the browser tests need Chromium, and SUNDIAL_CHROMIUM=%q is not one: %w", p, err)
		}
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", nil
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p, nil
	}
	return "", errors.New("the browser tests need Chromium: install it (Debian: apt-get install chromium; " +
		".ci/run does) or set SUNDIAL_CHROMIUM to its binary")
}

// browser is the one Chromium of the test binary, started by the first
// test that asks for it and closed by TestMain.
var browser struct {
	once  sync.Once
	ctx   context.Context
	err   error
	close func()
}

// sharedBrowser returns the context of the shared browser; every tab is a
// chromedp.NewContext of it.
func sharedBrowser() (context.Context, error) {
	browser.once.Do(func() {
		bin, err := chromiumPath()
		if err != nil {
			browser.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(bin), chromedp.WindowSize(1280, 900))
		// Chromium's sandbox refuses to run as root (CI runs as root).
		if os.Geteuid() == 0 {
			opts = append(opts, chromedp.NoSandbox)
		}
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(allocCtx)
		browser.close = func() { cancelCtx(); cancelAlloc() }
		// The first Do starts the browser and binds its life to the context
		// it is given: not a timeout's, so the bound is kept here.
		if err := within(startTimeout, browser.close, func() error { return chromedp.Do(ctx) }); err != nil {
			browser.err = fmt.Errorf("starting Chromium (%s): %w", bin, err)
			return
		}
		browser.ctx = ctx
	})
	return browser.ctx, browser.err
}

// closeBrowser closes the shared browser, when one was started.
func closeBrowser() {
	if browser.close != nil {
		browser.close()
	}
}

// within runs fn and, when it takes longer than d, calls abort (which must
// make fn return) and reports the timeout.
func within(d time.Duration, abort func(), fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		abort()
		// What the aborted call says, if anything, comes after.
		return errors.Join(fmt.Errorf("no answer within %s", d), <-done)
	}
}

package browser

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// axeSource is axe-core, vendored with its licence and lock
// (testdata/vendor, make vendor-dashboard).
//
//go:embed testdata/vendor/axe.min.js
var axeSource string

// violation is one rule axe-core finds broken, with the elements at fault.
type violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axeRun runs axe-core's WCAG 2.x A and AA rules and the best practices
// on the page and keeps the serious and critical violations. It is
// evaluated through DevTools, which the page's CSP does not govern: the
// dashboard itself loads no such script.
const axeRun = `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
  .filter(v => v.impact === "serious" || v.impact === "critical")
  .map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(" "))})))`

// checked holds the names of the pages axe-core has checked in this test
// binary.
var checked sync.Map

// accessible fails the test on any serious or critical accessibility
// violation of the page the tab shows (labels, contrast, names of links
// and buttons, landmarks, ...). Each page name is checked once a run: the
// tests visit the same pages many times, and each check is a large script
// run over the whole page.
func (tb *tab) accessible(page string) {
	tb.t.Helper()
	if _, seen := checked.LoadOrStore(page, true); seen {
		return
	}
	if !strings.Contains(run(tb, "axe loaded", chromedp.Evaluate[string](`typeof axe`)), "object") {
		run(tb, "load axe-core", chromedp.Evaluate[any](axeSource+";0"))
	}
	found := run(tb, "axe on "+page, chromedp.Evaluate[[]violation](axeRun, chromedp.EvalAwaitPromise))
	var lines []string
	for _, v := range found {
		lines = append(lines, fmt.Sprintf("%s (%s): %s: %s", v.ID, v.Impact, v.Help, strings.Join(v.Nodes, ", ")))
	}
	require.Empty(tb.t, lines, "accessibility of %s", page)
}

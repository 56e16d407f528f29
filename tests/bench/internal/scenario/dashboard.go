package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// dashboardGoalMs is the bound on each page's p99 (server time,
// read at the client on one keep-alive connection).
const dashboardGoalMs = 100.0

// dashboardWarmUp requests of each kind go first, unmeasured: the
// connection, the session cache, PostgreSQL's buffers for that page.
const dashboardWarmUp = 10

// dashboardPassword is the benchmark user's: long enough for the
// dashboard's minimum, never a real person's.
const dashboardPassword = "bench-dashboard-password-1"

// nextLink is the hooks page's "Next page" link (its query, HTML-escaped).
var nextLink = regexp.MustCompile(`<a rel="next" href="[^"?]*\?([^"]*)"`)

// dashboardPage is one request kind: a name, the path under the project,
// and a text its answer must hold.
type dashboardPage struct {
	name, path, marker string
}

// dashboard is the dashboard scenario: a project filled by SQL with
// DashboardHooks hooks over the last 7 days, their attempts and 7 days of
// delivery figures, a user signed in as its owner, and each page asked
// DashboardRequests times one after another on one connection.
func (e *Env) dashboard(ctx context.Context) (res report.Result, err error) {
	dir := filepath.Join(e.Cfg.Dir, "dashboard", "sundial")
	if err := os.RemoveAll(dir); err != nil {
		return res, err
	}
	d := &report.Dashboard{}
	res.Dashboard = d
	res.Notes = append(res.Notes, loadNote())
	res.Hooks = e.Cfg.DashboardHooks
	var seedErr error
	s, err := suite.Start(ctx, suite.Options{
		Scenario: "dashboard", Dir: dir, AdminURL: e.Cfg.AdminURL, Bin: e.Bin, Arrivals: 1000,
		ServiceEnv: e.Cfg.ServiceEnv, KeepDatabase: e.Cfg.KeepDatabase,
		Prepare: func(ctx context.Context, dbURL string, project suite.Credentials, domain string) error {
			d.Seed, seedErr = suite.SeedDashboard(ctx, dbURL, project.ProjectID, domain, e.Cfg.DashboardHooks)
			e.Log.Info("dashboard seeded", "scenario", "dashboard", "seed", fmt.Sprintf("%+v", d.Seed))
			if seedErr == nil {
				e.checkpoint(ctx, "dashboard", "sundial")
			}
			return seedErr
		},
	})
	if err != nil {
		return res, err
	}
	defer closeSuite(ctx, s, &res)
	e.Settings["sundial"] = s.Settings
	session, pages, err := e.dashboardSession(ctx, s)
	if err != nil {
		return res, err
	}
	res.OK = true
	d.Load = append(d.Load, "load average (1, 5, 15 min) before the first page: "+loadAverage())
	defer func() { d.Load = append(d.Load, "load average (1, 5, 15 min) after the last page: "+loadAverage()) }()
	for _, p := range pages {
		timed, err := timePage(ctx, session, p, e.Cfg.DashboardRequests)
		if err != nil {
			return res, err
		}
		d.Pages = append(d.Pages, report.DashboardPage{Name: p.name, Path: shortPath(p.path), Timed: timed})
		d.Goals = append(d.Goals, report.Goal{What: p.name + " p99", Target: fmt.Sprintf("under %.0f ms", dashboardGoalMs),
			Value: timed.Latency.P99Ms, Unit: "ms", Met: timed.Latency.P99Ms < dashboardGoalMs})
		res.OK = res.OK && len(timed.Errors) == 0 && timed.Latency.Count == e.Cfg.DashboardRequests
	}
	res.PeakRSSMiB = mib(s.PeakRSS())
	return res, nil
}

// dashboardSession signs in an owner of the suite's project and lists the
// pages to time, the next page's cursor read from the first page.
func (e *Env) dashboardSession(ctx context.Context, s *suite.Suite) (*load.Session, []dashboardPage, error) {
	link, err := s.CreateUser(ctx, "bench@example.com", "owner")
	if err != nil {
		return nil, nil, err
	}
	session, err := load.SignIn(ctx, s.APIBase, link, dashboardPassword)
	if err != nil {
		return nil, nil, err
	}
	hook, err := suite.HookWithAttempts(ctx, s.DBURL, s.Project.ProjectID)
	if err != nil {
		return nil, nil, err
	}
	base := "/dashboard/p/" + s.Project.ProjectID
	now := time.Now().UTC()
	day := func(daysAgo int) string { return now.AddDate(0, 0, -daysAgo).Format(time.RFC3339) }
	pages := []dashboardPage{
		{"overview 1h", base + "?range=1h", "Totals, last 1h"},
		{"overview 24h", base + "?range=24h", "Totals, last 24h"},
		{"overview 7d", base + "?range=7d", "Totals, last 7d"},
		{"hooks", base + "/hooks", "hooks match"},
		{"hooks status=failed", base + "/hooks?status=failed", "hooks match"},
		{"hooks createdAt one day", base + "/hooks?" + url.Values{"createdAtAfter": {day(4)}, "createdAtBefore": {day(3)}}.Encode(), "hooks match"},
		{"hooks postAt one day", base + "/hooks?" + url.Values{"postAtAfter": {day(4)}, "postAtBefore": {day(3)}}.Encode(), "hooks match"},
		{"hook (3 attempts)", base + "/hooks/" + hook.String(), hook.String()},
	}
	_, first, err := session.Get(ctx, base+"/hooks")
	if err != nil {
		return nil, nil, err
	}
	m := nextLink.FindSubmatch(first)
	if m == nil {
		return nil, nil, errors.New("the first hooks page has no next page link")
	}
	pages = append(pages, dashboardPage{"hooks next page", base + "/hooks?" + html.UnescapeString(string(m[1])), "hooks match"})
	return session, pages, nil
}

// timePage asks for p warm-up times, then n times measured; every answer
// 200 must hold p's marker.
func timePage(ctx context.Context, session *load.Session, p dashboardPage, n int) (load.Timed, error) {
	check := func(body []byte) error {
		if !bytes.Contains(body, []byte(p.marker)) {
			return fmt.Errorf("%s: the page does not hold %q", p.name, p.marker)
		}
		return nil
	}
	if _, err := session.Sequential(ctx, dashboardWarmUp, p.path, check); err != nil {
		return load.Timed{}, err
	}
	return session.Sequential(ctx, n, p.path, check)
}

// longCursor is a cursor parameter past its first 12 characters.
var longCursor = regexp.MustCompile(`cursor=[^&]{12}[^&]*`)

// shortPath is p with the cursor's value cut, for the report.
func shortPath(p string) string {
	return longCursor.ReplaceAllStringFunc(p, func(c string) string { return c[:len("cursor=")+12] + "..." })
}

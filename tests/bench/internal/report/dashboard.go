package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// Dashboard is the dashboard scenario's figures: how its project was
// filled, and each page timed one request after another.
type Dashboard struct {
	Seed suite.DashboardSeed `json:"seed"`
	// Load is the machine's load average when the timing started and
	// ended: the figures move with it on a shared machine.
	Load  []string        `json:"load"`
	Pages []DashboardPage `json:"pages"`
	// Goals are the issue's: each page's p99 under the bound. A goal not
	// met does not fail the run.
	Goals []Goal `json:"goals"`
}

// DashboardPage is one kind of request: a page with its query.
type DashboardPage struct {
	Name string `json:"name"`
	// Path is the path and query asked for, the project's id and the
	// cursor shortened for reading.
	Path  string     `json:"path"`
	Timed load.Timed `json:"timed"`
}

func (r Report) printDashboard(w io.Writer) {
	for _, res := range r.Results {
		d := res.Dashboard
		if d == nil {
			continue
		}
		s := d.Seed
		fmt.Fprintf(w, "\nDashboard pages (%s; %d hooks over 7 days, %d attempts, %d delivery_minutes rows, seeded in %.1f s; sequential requests on one connection, signed in):\n",
			res.System, s.Hooks, s.Attempts, s.Minutes, s.Seconds)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "page\trequests\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\t")
		for _, p := range d.Pages {
			l := p.Timed.Latency
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n", p.Name, p.Timed.Requests, l.P50Ms, l.P90Ms, l.P99Ms, l.MaxMs, formatErrors(p.Timed.Errors))
		}
		_ = tw.Flush()
		for _, l := range d.Load {
			fmt.Fprintln(w, l)
		}
		printGoals(w, d.Goals)
	}
}

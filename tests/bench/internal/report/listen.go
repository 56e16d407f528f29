package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/idlelisten"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/logscan"
)

// Listen is the listen scenario's figures: hooks delivered through one
// `sundial listen` process to a local receiver, the same steady load
// delivered directly over HTTPS in the same run, and the gateway's memory
// with many idle listeners connected.
type Listen struct {
	// Runs are the measured delivery runs in the order they ran: the
	// direct steady run, then the listener's steady and burst runs.
	Runs []ListenRun `json:"runs"`
	// WarmUps are the short runs before them, one per path, not measured:
	// they open the paths' connections and fill the services' caches.
	WarmUps []ListenRun `json:"warmUps"`
	// AddedP99Ms is the listener's steady lateness p99 minus the direct
	// run's: what going through the listener adds.
	AddedP99Ms float64 `json:"addedP99Ms"`
	Idle       Idle    `json:"idle"`
	// Goals are the goals, each against its figure. A goal not
	// met does not fail the run: the figures move with the machine.
	Goals []Goal `json:"goals"`
}

// ListenRun is one delivery run of the listen scenario.
type ListenRun struct {
	Name string `json:"name"`
	// Via is how the hooks reached the receiver: "https" (the project's
	// domain) or "listener" (the gateway's WebSocket, then `sundial
	// listen`'s POST to the local receiver).
	Via    string        `json:"via"`
	Hooks  int           `json:"hooks"`
	Create load.Created  `json:"create"`
	Check  check.Outcome `json:"check"`
	// AllDeliveredSeconds, DeliveriesPerSecond and SustainedPerSecond are
	// as a delivery scenario's (Result).
	AllDeliveredSeconds float64 `json:"allDeliveredSeconds"`
	DeliveriesPerSecond float64 `json:"deliveriesPerSecond"`
	SustainedPerSecond  float64 `json:"sustainedPerSecond"`
	// CPUSeconds is processor time from the first postAt until every
	// result was applied; "listener" is the `sundial listen` process.
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	Stages     []logscan.Stage    `json:"stages"`
	// Misrouted counts arrivals at the other receiver during the run (the
	// HTTPS one during a listener run): hooks that did not go the way
	// measured.
	Misrouted int `json:"misrouted"`
	// LocalConnections counts the connections `sundial listen` opened to
	// the local receiver during a listener run: how well it reuses them.
	LocalConnections int      `json:"localConnections"`
	Notes            []string `json:"notes,omitempty"`
}

// Idle is the gateway with many idle listener connections open.
type Idle struct {
	// Connections is how many were opened, Opened how that went.
	Connections int               `json:"connections"`
	Opened      idlelisten.Opened `json:"opened"`
	// GatewayRSSBeforeMiB is the gateway's VmRSS before the first was
	// opened; GatewayRSSMiB its highest VmRSS while all were open (read a
	// few times over a couple of seconds); GatewayHWMMiB its VmHWM then.
	GatewayRSSBeforeMiB float64 `json:"gatewayRssBeforeMiB"`
	GatewayRSSMiB       float64 `json:"gatewayRssMiB"`
	GatewayHWMMiB       float64 `json:"gatewayHwmMiB"`
	// PerConnectionKiB is the RSS the connections added, per connection.
	PerConnectionKiB float64 `json:"perConnectionKiB"`
	// StillOpen is how many were still open when the memory was read.
	StillOpen int `json:"stillOpen"`
}

// Goal is one of the goals against its figure.
type Goal struct {
	What   string  `json:"what"`
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Met    bool    `json:"met"`
}

func (r Report) printListen(w io.Writer) {
	for _, res := range r.Results {
		l := res.Listen
		if l == nil {
			continue
		}
		fmt.Fprintf(w, "\nListener (%s; lateness = first arrival - postAt):\n", res.System)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "run\tvia\thooks\tcreate/s\tdelivered\tdup\tearly\tlate p50 ms\tp99 ms\tmax ms\tall in s\tdeliv/s\tsustained/s\tmisrouted\tlocal conns\t")
		for _, run := range l.Runs {
			c := run.Check
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.2f\t%.0f\t%.0f\t%d\t%d\t\n",
				run.Name, run.Via, run.Hooks, run.Create.PerSecond, c.Delivered, c.Duplicates, c.Early,
				c.Lateness.P50Ms, c.Lateness.P99Ms, c.Lateness.MaxMs, run.AllDeliveredSeconds,
				run.DeliveriesPerSecond, run.SustainedPerSecond, run.Misrouted, run.LocalConnections)
		}
		_ = tw.Flush()
		fmt.Fprintf(w, "lateness p99 added by the listener (steady): %.1f ms\n", l.AddedP99Ms)
		i := l.Idle
		fmt.Fprintf(w, "idle listeners: %d of %d connected in %.1f s (errors %s), %d still open; gateway RSS %.1f MiB before, %.1f MiB with them (VmHWM %.1f), %.1f KiB per connection\n",
			i.Opened.Connected, i.Connections, i.Opened.Seconds, formatErrors(i.Opened.Errors), i.StillOpen,
			i.GatewayRSSBeforeMiB, i.GatewayRSSMiB, i.GatewayHWMMiB, i.PerConnectionKiB)
		printGoals(w, l.Goals)
	}
}

// printGoals prints each goal with its figure, met or not.
func printGoals(w io.Writer, goals []Goal) {
	for _, g := range goals {
		met := "met"
		if !g.Met {
			met = "NOT met"
		}
		fmt.Fprintf(w, "goal: %s %s: %.1f %s, %s\n", g.What, g.Target, g.Value, g.Unit, met)
	}
}

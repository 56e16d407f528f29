package report_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/idlelisten"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// The listen scenario has a table of its own: its runs, the lateness the
// listener adds, the idle connections' memory and each goal, met or not;
// it is not a row of the delivery table.
func TestListenTable(t *testing.T) {
	t.Parallel()
	run := func(name, via string, perSecond, p99 float64) report.ListenRun {
		return report.ListenRun{Name: name, Via: via, Hooks: 100, DeliveriesPerSecond: perSecond,
			Check: check.Outcome{Delivered: 100, Lateness: stats.Summary{P50Ms: 1, P99Ms: p99, MaxMs: 2 * p99}}}
	}
	r := report.Report{Results: []report.Result{
		row("burst", "sundial", 3000, 400, nil),
		{Scenario: "listen", System: "sundial", OK: true, Listen: &report.Listen{
			Runs:       []report.ListenRun{run("https steady", "https", 500, 6.5), run("listener steady", "listener", 500, 9), run("listener burst", "listener", 1800, 900)},
			AddedP99Ms: 2.5,
			Idle: report.Idle{Connections: 1000, Opened: idlelisten.Opened{Connected: 1000, Seconds: 3.2}, StillOpen: 1000,
				GatewayRSSBeforeMiB: 20, GatewayRSSMiB: 61.5, GatewayHWMMiB: 62, PerConnectionKiB: 42.5},
			Goals: []report.Goal{
				{What: "deliveries/s through one listener (burst)", Target: ">= 2000", Value: 1800, Unit: "/s", Met: false},
				{What: "lateness p99 added by the listener (steady)", Target: "<= 20 ms", Value: 2.5, Unit: "ms", Met: true},
			},
		}},
	}}
	var out bytes.Buffer
	r.PrintTable(&out)
	text := out.String()
	require.Contains(t, text, "Listener (sundial")
	require.Regexp(t, `listener burst\s+listener\s+100\s`, text)
	require.Contains(t, text, "lateness p99 added by the listener (steady): 2.5 ms")
	require.Contains(t, text, "idle listeners: 1000 of 1000 connected in 3.2 s (errors 0), 1000 still open; gateway RSS 20.0 MiB before, 61.5 MiB with them (VmHWM 62.0), 42.5 KiB per connection")
	require.Contains(t, text, "goal: deliveries/s through one listener (burst) >= 2000: 1800.0 /s, NOT met")
	require.Contains(t, text, "goal: lateness p99 added by the listener (steady) <= 20 ms: 2.5 ms, met")
	require.NotRegexp(t, `(?m)^\s*listen\s+sundial\s+\d`, text, "no delivery-table row for listen")
}

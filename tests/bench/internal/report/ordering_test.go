package report_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// The ordering row is compared with the same system's burst and steady
// rows of the run, when they passed, and printed with its order check.
func TestOrderingAgainstBurstAndSteady(t *testing.T) {
	t.Parallel()
	ordering := func() report.Result {
		r := row("ordering", "sundial", 1200, 3000, nil)
		r.Ordering = &report.Ordering{
			Keys: 100, PerKey: 10, KeyedHooks: 1000, DeliveriesPerSecond: 2000, AllArrivedSeconds: 0.5,
			Flow: stats.Summary{P50Ms: 5, P99Ms: 30, MaxMs: 60}, FlowHooks: 500, FlowRate: 100, FlowSeconds: 5,
			Order: check.Order{Keys: 100}, Verified: 1500,
		}
		return r
	}
	alone := []report.Result{ordering()}
	report.CompareOrdering(alone)
	require.Zero(t, alone[0].Ordering.VsBurst, "no burst row: the figure stands alone")
	require.Zero(t, alone[0].Ordering.FlowVsSteadyP99)

	failed := row("burst", "sundial", 9000, 100, nil)
	failed.OK = false
	results := []report.Result{
		failed,
		row("burst", "baseline", 8000, 100, nil),
		row("burst", "sundial", 5000, 100, nil),
		row("steady", "sundial", 500, 20, nil),
		ordering(),
	}
	report.CompareOrdering(results)
	o := results[4].Ordering
	require.Zero(t, o.VsPlain, "no baseline row")
	require.Equal(t, 5000.0, o.BurstDeliveriesPerSecond, "the same system's burst that passed")
	require.Equal(t, 0.4, o.VsBurst)
	require.Equal(t, 20.0, o.SteadyP99Ms)
	require.Equal(t, 1.5, o.FlowVsSteadyP99)
	require.True(t, o.OK())

	var out bytes.Buffer
	report.Report{Results: results}.PrintTable(&out)
	text := out.String()
	require.Contains(t, text, "Ordering keys (sundial): 100 keys x 10 hooks")
	require.Contains(t, text, "2000 deliveries/s (0.40x burst's 5000/s)")
	require.Contains(t, text, "p99 30.0 ms (1.50x steady's 20.0 ms)")
	require.Contains(t, text, "order: 0 arrivals before their predecessor's, 0 behind a later hook's, 0 keys of 100")

	o.Order.Skipped, o.Order.KeysViolated = 1, 1
	require.False(t, o.OK(), "a hook before its predecessor fails the run")
	o.Order.Skipped, o.Misrouted = 0, 1
	require.False(t, o.OK(), "so does a misrouted one")
}

// The ordering row is compared with its baseline of the same run (the
// same hooks with no ordering key), which is printed without an order.
func TestOrderingAgainstItsBaseline(t *testing.T) {
	t.Parallel()
	keyed := row("ordering", "sundial", 1200, 3000, nil)
	keyed.Ordering = &report.Ordering{
		Keys: 100, PerKey: 10, KeyedHooks: 1000, DeliveriesPerSecond: 2000,
		Flow: stats.Summary{P99Ms: 30}, Other: stats.Summary{P99Ms: 40}, Order: check.Order{Keys: 100},
	}
	plain := row("ordering-plain", "sundial", 1200, 3000, nil)
	plain.Ordering = &report.Ordering{
		Keys: 100, PerKey: 10, Plain: true, KeyedHooks: 1000, DeliveriesPerSecond: 4000,
		Flow: stats.Summary{P99Ms: 20}, Other: stats.Summary{P99Ms: 50},
	}
	results := []report.Result{keyed, plain}
	report.CompareOrdering(results)
	o := results[0].Ordering
	require.Equal(t, 4000.0, o.PlainDeliveriesPerSecond)
	require.Equal(t, 0.5, o.VsPlain)
	require.Equal(t, 1.5, o.FlowVsPlainP99)
	require.Equal(t, 0.8, o.OtherVsPlainP99)
	require.Zero(t, results[1].Ordering.VsPlain, "the baseline is not compared with itself")

	var out bytes.Buffer
	report.Report{Results: results}.PrintTable(&out)
	text := out.String()
	require.Contains(t, text, "2000 deliveries/s (-; 0.50x the baseline's 4000/s)")
	require.Contains(t, text, "p99 30.0 ms (-; 1.50x the baseline's)")
	require.Contains(t, text, "p99 40.0 ms (0.80x the baseline's)")
	require.Contains(t, text, "Ordering's baseline (sundial): 1000 hooks with no ordering key")
	require.Equal(t, 1, bytes.Count(out.Bytes(), []byte("order: ")), "the baseline has no order")
}

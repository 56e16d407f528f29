package report

import (
	"fmt"
	"io"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// Ordering is the ordering scenario's figures: Keys ordering keys of
// PerKey hooks each, all due at one instant, and plain flows beside them
// in the same run. The Result's Check covers them all. With Plain set they
// are its baseline's (ordering-plain): the same hooks with no ordering
// key, so no order to check.
type Ordering struct {
	Keys   int  `json:"keys"`
	PerKey int  `json:"perKey"`
	Plain  bool `json:"plain,omitempty"`
	// Keyed are the keyed hooks' first arrivals against their postAt.
	// AllArrivedSeconds runs from the instant to the last keyed hook's
	// first arrival, and DeliveriesPerSecond is the keyed hooks over it.
	Keyed               stats.Summary `json:"keyed"`
	KeyedHooks          int           `json:"keyedHooks"`
	KeyedMissing        int           `json:"keyedMissing"`
	AllArrivedSeconds   float64       `json:"allArrivedSeconds"`
	DeliveriesPerSecond float64       `json:"deliveriesPerSecond"`
	// Order is how the keyed arrivals kept their keys' order (any
	// violation fails the run) and the handoffs between a key's hooks.
	Order check.Order `json:"order"`
	// Flow is the lateness of the plain hooks' first arrivals, FlowRate
	// hooks/s due for FlowSeconds from the instant, and FlowDuring that of
	// those due before the last keyed hook's first arrival: the flow while
	// keyed hooks were being delivered.
	Flow        stats.Summary `json:"flow"`
	FlowDuring  stats.Summary `json:"flowDuring"`
	FlowHooks   int           `json:"flowHooks"`
	FlowMissing int           `json:"flowMissing"`
	FlowRate    int           `json:"flowRate"`
	FlowSeconds int           `json:"flowSeconds"`
	// Other and OtherDuring are the same of another project's plain flow,
	// OtherRate hooks/s for FlowSeconds to the same receiver: a tenant
	// beside the keys' project.
	Other        stats.Summary `json:"other"`
	OtherDuring  stats.Summary `json:"otherDuring"`
	OtherHooks   int           `json:"otherHooks"`
	OtherMissing int           `json:"otherMissing"`
	OtherRate    int           `json:"otherRate"`
	// Verified counts the requests whose signature was checked, and
	// BadSignatures those refused for it; Misrouted the requests on
	// another path than their hook's, or of no hook of the run.
	Verified      int `json:"verified"`
	BadSignatures int `json:"badSignatures"`
	Misrouted     int `json:"misrouted"`
	// BurstDeliveriesPerSecond and SteadyP99Ms are the same run's burst
	// and steady figures (the same system), when they ran and passed;
	// VsBurst is DeliveriesPerSecond over the former, FlowVsSteadyP99 the
	// flow's p99 over the latter.
	BurstDeliveriesPerSecond float64 `json:"burstDeliveriesPerSecond,omitempty"`
	VsBurst                  float64 `json:"vsBurst,omitempty"`
	SteadyP99Ms              float64 `json:"steadyP99Ms,omitempty"`
	FlowVsSteadyP99          float64 `json:"flowVsSteadyP99,omitempty"`
	// PlainDeliveriesPerSecond is the baseline's rate of the same run,
	// when it ran and passed; VsPlain is DeliveriesPerSecond over it, and
	// FlowVsPlainP99 and OtherVsPlainP99 the flows' p99 over the
	// baseline's: how much later the flows are beside keys than beside as
	// many hooks with none.
	PlainDeliveriesPerSecond float64 `json:"plainDeliveriesPerSecond,omitempty"`
	VsPlain                  float64 `json:"vsPlain,omitempty"`
	FlowVsPlainP99           float64 `json:"flowVsPlainP99,omitempty"`
	OtherVsPlainP99          float64 `json:"otherVsPlainP99,omitempty"`
}

// OK says every keyed arrival kept its key's order, every request went
// where its hook was sent and every signature held.
func (o *Ordering) OK() bool {
	return o.Order.Violations() == 0 && o.Misrouted == 0 && o.BadSignatures == 0
}

// CompareOrdering sets, on each ordering row, the same run's burst
// deliveries/s and steady lateness p99 of the same system and the ratios,
// and on the keyed row the baseline's figures and ratios, when those rows
// ran and passed.
func CompareOrdering(results []Result) {
	for i := range results {
		o := results[i].Ordering
		if o == nil {
			continue
		}
		for _, r := range results {
			if r.System != results[i].System || !r.OK {
				continue
			}
			if p := r.Ordering; p != nil && p.Plain && !o.Plain {
				o.PlainDeliveriesPerSecond = p.DeliveriesPerSecond
				o.VsPlain = ratio(o.DeliveriesPerSecond, p.DeliveriesPerSecond)
				o.FlowVsPlainP99 = ratio(o.Flow.P99Ms, p.Flow.P99Ms)
				o.OtherVsPlainP99 = ratio(o.Other.P99Ms, p.Other.P99Ms)
			}
			switch r.Scenario {
			case "burst":
				o.BurstDeliveriesPerSecond = r.DeliveriesPerSecond
				o.VsBurst = ratio(o.DeliveriesPerSecond, r.DeliveriesPerSecond)
			case "steady":
				o.SteadyP99Ms = r.Check.Lateness.P99Ms
				o.FlowVsSteadyP99 = ratio(o.Flow.P99Ms, r.Check.Lateness.P99Ms)
			}
		}
	}
}

func (r Report) printOrdering(w io.Writer) {
	for _, res := range r.Results {
		o := res.Ordering
		if o == nil {
			continue
		}
		what := fmt.Sprintf("Ordering keys (%s): %d keys x %d hooks", res.System, o.Keys, o.PerKey)
		if o.Plain {
			what = fmt.Sprintf("Ordering's baseline (%s): %d hooks with no ordering key", res.System, o.KeyedHooks)
		}
		fmt.Fprintf(w, "\n%s due at one instant, beside %d plain hooks/s of the project and %d of another for %d s; %d requests verified, %d bad signatures, %d misrouted\n",
			what, o.FlowRate, o.OtherRate, o.FlowSeconds, o.Verified, o.BadSignatures, o.Misrouted)
		vsBurst, vsSteady := "-", "-"
		if o.BurstDeliveriesPerSecond > 0 {
			vsBurst = fmt.Sprintf("%.2fx burst's %.0f/s", o.VsBurst, o.BurstDeliveriesPerSecond)
		}
		if o.PlainDeliveriesPerSecond > 0 {
			vsBurst += fmt.Sprintf("; %.2fx the baseline's %.0f/s", o.VsPlain, o.PlainDeliveriesPerSecond)
		}
		if o.SteadyP99Ms > 0 {
			vsSteady = fmt.Sprintf("%.2fx steady's %.1f ms", o.FlowVsSteadyP99, o.SteadyP99Ms)
		}
		if o.FlowVsPlainP99 > 0 {
			vsSteady += fmt.Sprintf("; %.2fx the baseline's", o.FlowVsPlainP99)
		}
		k, f := o.Keyed, o.Flow
		label := "keyed"
		if o.Plain {
			label = "in the keys' place"
		}
		fmt.Fprintf(w, "%s: %d hooks, %d missing, all arrived in %.2f s, %.0f deliveries/s (%s); lateness p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
			label, o.KeyedHooks, o.KeyedMissing, o.AllArrivedSeconds, o.DeliveriesPerSecond, vsBurst, k.P50Ms, k.P99Ms, k.MaxMs)
		if !o.Plain {
			fmt.Fprintf(w, "order: %d arrivals before their predecessor's, %d behind a later hook's, %d keys of %d; handoff p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
				o.Order.Skipped, o.Order.OutOfOrder, o.Order.KeysViolated, o.Order.Keys,
				o.Order.Handoff.P50Ms, o.Order.Handoff.P99Ms, o.Order.Handoff.MaxMs)
		}
		printFlow(w, "flow", o.FlowHooks, o.FlowMissing, f, o.FlowDuring, " ("+vsSteady+")")
		vsPlain := ""
		if o.OtherVsPlainP99 > 0 {
			vsPlain = fmt.Sprintf(" (%.2fx the baseline's)", o.OtherVsPlainP99)
		}
		printFlow(w, "another project's flow", o.OtherHooks, o.OtherMissing, o.Other, o.OtherDuring, vsPlain)
	}
}

// printFlow prints one plain flow's line: its lateness, vs after its p99,
// and that of its hooks due while the hooks of the instant were delivered.
func printFlow(w io.Writer, name string, hooks, missing int, all, during stats.Summary, vs string) {
	fmt.Fprintf(w, "%s: %d hooks, %d missing; lateness p50 %.1f ms, p99 %.1f ms%s, max %.1f ms; the %d due while the hooks of the instant were delivered: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		name, hooks, missing, all.P50Ms, all.P99Ms, vs, all.MaxMs, during.Count, during.P50Ms, during.P99Ms, during.MaxMs)
}

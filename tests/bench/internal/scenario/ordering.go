package scenario

import (
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// The ordering scenario: many ordering keys whose hooks are all due at one
// instant, which Sundial must deliver one at a time per key, in order,
// beside a plain flow that ordering must not slow. Each path is the
// receiver's check that a hook arrived where it was sent.
const (
	orderingKeyedPath = "/bench/ordering/keyed"
	orderingFlowPath  = "/bench/ordering/flow"
)

// orderingShape is the ordering scenario's load: keys ordering keys of
// perKey hooks, and a plain flow of rate hooks/s for flowSeconds.
type orderingShape struct {
	keys, perKey      int
	rate, flowSeconds int
}

func orderingOf(c Config) *orderingShape {
	return &orderingShape{keys: c.OrderingKeys, perKey: c.OrderingPerKey, rate: c.SteadyRate, flowSeconds: c.OrderingFlowSeconds}
}

// orderingPlan is the ordering scenario's plan. A key's hooks go one after
// another, each after its predecessor's result, so the last may come long
// after the instant: the burst's deadline.
func orderingPlan(c Config) plan {
	o := orderingOf(c)
	return plan{name: "ordering", hooks: o.hooks(), deadline: scaleDeadline, ordering: o, profile: true}
}

func (o *orderingShape) keyed() int { return o.keys * o.perKey }

func (o *orderingShape) hooks() int { return o.keyed() + o.rate*o.flowSeconds }

// place is the i-th hook's place in its key's line, false for a flow hook.
// The keyed hooks come first, in rounds of one hook of every key, so that
// the keys are interleaved; round r holds each key's hook perKey-1-r, so
// that each key's hooks are created in the reverse of their order, and
// only their postAt (a millisecond apart) can put them in it: an order by
// creation, or by UUIDv7 id, would deliver them backwards.
func (o *orderingShape) place(i int) (check.Place, bool) {
	if i >= o.keyed() {
		return check.Place{}, false
	}
	return check.Place{Key: i % o.keys, Seq: o.perKey - 1 - i/o.keys}, true
}

// orderingKey names key k.
func orderingKey(k int) string { return fmt.Sprintf("bench-%d", k) }

// specs are the hooks to create: each key's hook seq due seq milliseconds
// after t0, then the flow from t0.
func (o *orderingShape) specs(t0 time.Time) []load.Spec {
	out := make([]load.Spec, o.hooks())
	for i := range out {
		if p, ok := o.place(i); ok {
			out[i] = load.Spec{PostAt: t0.Add(time.Duration(p.Seq) * time.Millisecond), Path: orderingKeyedPath, OrderingKey: orderingKey(p.Key)}
			continue
		}
		j := i - o.keyed()
		out[i] = load.Spec{PostAt: t0.Add(time.Second * time.Duration(j) / time.Duration(o.rate)), Path: orderingFlowPath}
	}
	return out
}

// places are the created keyed hooks' places; it fails when the postAts
// the API stored do not ascend with each key's order, which the order
// check relies on.
func (o *orderingShape) places(hooks []check.Hook) (map[uuid.UUID]check.Place, error) {
	out := make(map[uuid.UUID]check.Place, o.keyed())
	lines := make([][]time.Time, o.keys)
	for i, h := range hooks {
		p, ok := o.place(i)
		if !ok {
			continue
		}
		out[h.ID] = p
		if lines[p.Key] == nil {
			lines[p.Key] = make([]time.Time, o.perKey)
		}
		lines[p.Key][p.Seq] = h.PostAt
	}
	for k, line := range lines {
		for seq := 1; seq < len(line); seq++ {
			if !line[seq].After(line[seq-1]) {
				return nil, fmt.Errorf("ordering: key %d's hook %d is due at %s, not after hook %d's %s", k, seq, line[seq], seq-1, line[seq-1])
			}
		}
	}
	return out, nil
}

// receiver verifies every signature with key and each request's path
// against its hook's.
func (o *orderingShape) receiver(hooks []check.Hook, key string) *receiver.Realistic {
	routes := make(map[uuid.UUID]string, len(hooks))
	for i, h := range hooks {
		routes[h.ID] = orderingFlowPath
		if _, ok := o.place(i); ok {
			routes[h.ID] = orderingKeyedPath
		}
	}
	return &receiver.Realistic{SigningKey: key, Routes: routes}
}

// figures measures the keyed hooks (their rate from the instant, their
// order) and the flow beside them from the arrivals.
func (o *orderingShape) figures(hooks []check.Hook, arrivals []check.Arrival, recv *receiver.Receiver) (*report.Ordering, error) {
	places, err := o.places(hooks)
	if err != nil {
		return nil, err
	}
	var keyed, flow []check.Hook
	for i, h := range hooks {
		if _, ok := o.place(i); ok {
			keyed = append(keyed, h)
		} else {
			flow = append(flow, h)
		}
	}
	k, f := check.Compare(keyed, arrivals), check.Compare(flow, arrivals)
	out := &report.Ordering{
		Keys: o.keys, PerKey: o.perKey,
		Keyed: k.Lateness, KeyedHooks: len(keyed), KeyedMissing: k.Missing,
		Order: check.CheckOrder(places, arrivals),
		Flow:  f.Lateness, FlowHooks: len(flow), FlowMissing: f.Missing, FlowRate: o.rate, FlowSeconds: o.flowSeconds,
		Verified: len(arrivals), BadSignatures: recv.BadSignatures(), Misrouted: recv.Misrouted(),
	}
	if k.Delivered > 0 {
		all := k.LastArrival.Sub(k.FirstPostAt)
		out.AllArrivedSeconds = math.Round(all.Seconds()*1000) / 1000
		out.DeliveriesPerSecond = stats.PerSecond(k.Delivered, all)
		out.FlowDuring = flowBefore(flow, arrivals, k.LastArrival)
	}
	return out, nil
}

// flowBefore is the lateness of the flow hooks due before end (the last
// keyed hook's first arrival): those delivered while keyed ones were.
func flowBefore(flow []check.Hook, arrivals []check.Arrival, end time.Time) stats.Summary {
	var during []check.Hook
	for _, h := range flow {
		if h.PostAt.Before(end) {
			during = append(during, h)
		}
	}
	return check.Compare(during, arrivals).Lateness
}

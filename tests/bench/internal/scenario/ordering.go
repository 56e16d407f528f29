package scenario

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// The ordering scenario: many ordering keys whose hooks are all due at one
// instant, which Sundial must deliver one at a time per key, in order,
// beside plain flows that ordering must not slow: one of the same project
// to the same receiver, and a smaller one of another project (another
// tenant on the same host). Each path is the receiver's check that a hook
// arrived where it was sent.
const (
	orderingKeyedPath = "/bench/ordering/keyed"
	orderingFlowPath  = "/bench/ordering/flow"
	orderingOtherPath = "/bench/ordering/other"
)

// otherShare divides the flow's rate for the other project's.
const otherShare = 5

// orderingShape is the ordering scenario's load: keys ordering keys of
// perKey hooks, a plain flow of rate hooks/s for flowSeconds, and the
// other project's plain flow of rate/otherShare hooks/s for as long. With
// plain set it is the scenario's baseline (ordering-plain): the same hooks
// at the same instants with no ordering key, which tells what the flows
// meet beside as many hooks due at once whatever their keys.
type orderingShape struct {
	keys, perKey      int
	rate, flowSeconds int
	plain             bool
}

// projectInstance is an instance that can make another project of the
// same receiver.
type projectInstance interface {
	CreateProject(ctx context.Context, name string) (suite.Credentials, error)
}

// errNoProjects is an instance the ordering scenario cannot make another
// project on.
var errNoProjects = errors.New("ordering: the instance cannot make another project")

// createOther makes the ordering scenario's other project.
func createOther(ctx context.Context, in Instance) (suite.Credentials, error) {
	pi, ok := in.(projectInstance)
	if !ok {
		return suite.Credentials{}, errNoProjects
	}
	c, err := pi.CreateProject(ctx, "bench-ordering-other")
	if err != nil {
		return suite.Credentials{}, fmt.Errorf("ordering: another project: %w", err)
	}
	return c, nil
}

// orderingKind is what a hook of the scenario is.
type orderingKind int

const (
	keyedHook orderingKind = iota
	flowHook
	otherHook
)

func orderingOf(c Config) *orderingShape {
	return &orderingShape{keys: c.OrderingKeys, perKey: c.OrderingPerKey, rate: c.SteadyRate, flowSeconds: c.OrderingFlowSeconds}
}

// orderingPlan is the plan of the ordering scenario, or with plain of its
// baseline. A key's hooks go one after another, each after its
// predecessor's result, so the last may come long after the instant: the
// burst's deadline.
func orderingPlan(name string, c Config, plain bool) plan {
	o := orderingOf(c)
	o.plain = plain
	return plan{name: name, hooks: o.hooks(), deadline: scaleDeadline, ordering: o, profile: true}
}

func (o *orderingShape) keyed() int { return o.keys * o.perKey }

func (o *orderingShape) flow() int { return o.rate * o.flowSeconds }

func (o *orderingShape) otherRate() int { return max(1, o.rate/otherShare) }

func (o *orderingShape) hooks() int { return o.keyed() + o.flow() + o.otherRate()*o.flowSeconds }

// kind is the i-th hook's kind: the keyed hooks come first, then the
// flow, then the other project's.
func (o *orderingShape) kind(i int) orderingKind {
	switch {
	case i < o.keyed():
		return keyedHook
	case i < o.keyed()+o.flow():
		return flowHook
	}
	return otherHook
}

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
// after t0, then the flow from t0, then the other project's flow from t0,
// created with otherAPIKey.
func (o *orderingShape) specs(t0 time.Time, otherAPIKey string) []load.Spec {
	out := make([]load.Spec, o.hooks())
	for i := range out {
		switch o.kind(i) {
		case keyedHook:
			p, _ := o.place(i)
			key := orderingKey(p.Key)
			if o.plain {
				key = ""
			}
			out[i] = load.Spec{PostAt: t0.Add(time.Duration(p.Seq) * time.Millisecond), Path: orderingKeyedPath, OrderingKey: key}
		case flowHook:
			out[i] = load.Spec{PostAt: nth(t0, i-o.keyed(), o.rate), Path: orderingFlowPath}
		case otherHook:
			out[i] = load.Spec{PostAt: nth(t0, i-o.keyed()-o.flow(), o.otherRate()), Path: orderingOtherPath, APIKey: otherAPIKey}
		}
	}
	return out
}

// nth is when the j-th hook of a flow of rate hooks/s from t0 is due.
func nth(t0 time.Time, j, rate int) time.Time {
	return t0.Add(time.Second * time.Duration(j) / time.Duration(rate))
}

// pathOf is the path of a hook of kind k.
func pathOf(k orderingKind) string {
	return [...]string{keyedHook: orderingKeyedPath, flowHook: orderingFlowPath, otherHook: orderingOtherPath}[k]
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

// receiver verifies every signature with key, the other project's with
// otherKey, and each request's path against its hook's.
func (o *orderingShape) receiver(hooks []check.Hook, key, otherKey string) *receiver.Realistic {
	routes := make(map[uuid.UUID]string, len(hooks))
	for i, h := range hooks {
		routes[h.ID] = pathOf(o.kind(i))
	}
	return &receiver.Realistic{SigningKey: key, PathKeys: map[string]string{orderingOtherPath: otherKey}, Routes: routes}
}

// figures measures the keyed hooks (their rate from the instant, their
// order) and the flow beside them from the arrivals.
func (o *orderingShape) figures(hooks []check.Hook, arrivals []check.Arrival, recv *receiver.Receiver) (*report.Ordering, error) {
	places, err := o.places(hooks)
	if err != nil {
		return nil, err
	}
	var byKind [3][]check.Hook
	for i, h := range hooks {
		byKind[o.kind(i)] = append(byKind[o.kind(i)], h)
	}
	keyed, flow, other := byKind[keyedHook], byKind[flowHook], byKind[otherHook]
	k, f, x := check.Compare(keyed, arrivals), check.Compare(flow, arrivals), check.Compare(other, arrivals)
	out := &report.Ordering{
		Keys: o.keys, PerKey: o.perKey, Plain: o.plain,
		Keyed: k.Lateness, KeyedHooks: len(keyed), KeyedMissing: k.Missing,
		Flow: f.Lateness, FlowHooks: len(flow), FlowMissing: f.Missing, FlowRate: o.rate, FlowSeconds: o.flowSeconds,
		Other: x.Lateness, OtherHooks: len(other), OtherMissing: x.Missing, OtherRate: o.otherRate(),
		Verified: len(arrivals), BadSignatures: recv.BadSignatures(), Misrouted: recv.Misrouted(),
	}
	if !o.plain {
		out.Order = check.CheckOrder(places, arrivals)
	}
	if k.Delivered > 0 {
		all := k.LastArrival.Sub(k.FirstPostAt)
		out.AllArrivedSeconds = math.Round(all.Seconds()*1000) / 1000
		out.DeliveriesPerSecond = stats.PerSecond(k.Delivered, all)
		out.FlowDuring = flowBefore(flow, arrivals, k.LastArrival)
		out.OtherDuring = flowBefore(other, arrivals, k.LastArrival)
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

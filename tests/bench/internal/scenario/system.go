package scenario

import (
	"context"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/baseline"
	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// System is a scheduler the delivery scenarios measure: Sundial, or the
// river baseline a team would otherwise build. Both deliver to the same
// kind of receiver, which records each Sundial-Id and arrival time.
type System struct {
	Name string
	// MinLead is how far ahead of its instant a hook must be scheduled for
	// the system to deliver it on time.
	MinLead time.Duration
	// Start runs a fresh instance in dir for one scenario, with the plan's
	// backlog of far-future hooks already stored and a receiver with room
	// for arrivals.
	Start func(ctx context.Context, e *Env, p plan, dir string, arrivals int) (Instance, error)
}

// Systems lists the systems in the order each scenario runs on them.
var Systems = []System{
	{Name: "sundial", Start: startSundial},
	{Name: "baseline", Start: startBaseline, MinLead: baseline.MinLead},
}

// SystemNames lists the registered systems, Sundial first.
func SystemNames() []string {
	var out []string
	for _, s := range Systems {
		out = append(out, s.Name)
	}
	return out
}

// Instance is one running system.
type Instance interface {
	// Receiver is where the instance delivers.
	Receiver() *receiver.Receiver
	// Schedule stores one hook per postAt, due then, at path, and returns
	// them with their ids; it is how a user would schedule them (Sundial's
	// API, river's InsertMany).
	Schedule(ctx context.Context, postAts []time.Time, path string) ([]check.Hook, load.Created, error)
	// ScheduleSpecs stores one hook per spec, as Schedule does.
	ScheduleSpecs(ctx context.Context, specs []load.Spec) ([]check.Hook, load.Created, error)
	// SigningKey is the key the instance signs its deliveries with.
	SigningKey() string
	// BeginDelivery is called once the hooks are scheduled, before the
	// first is due at t0; it returns notes for the report.
	BeginDelivery(ctx context.Context, t0 time.Time) []string
	// Usage reads the processor time and database and NATS counters so far.
	Usage(ctx context.Context) Usage
	// PeakRSS is each of the instance's processes' peak RSS so far.
	PeakRSS() map[string]int64
	// Settle is called once every hook arrived or the deadline passed: it
	// waits for the instance's bookkeeping of the hooks' results, reads
	// the usage and peak RSS, stops delivering and adds what else it knows
	// (stages, profiles, notes) to res.
	Settle(ctx context.Context, hooks int, res *report.Result) (Usage, map[string]int64)
	// Backlog says how the plan's backlog was loaded, nil without one.
	Backlog() *suite.BacklogLoad
	// Settings are what a user would set to run the system this way.
	Settings() map[string]string
	// Close stops everything and drops the instance's database.
	Close(ctx context.Context) error
}

// Usage is what a delivery phase costs, read before and after it.
type Usage struct {
	CPU      map[string]time.Duration
	Database suite.DBStats
	NATS     suite.NATSStats
}

// Sub is u minus an earlier reading.
func (u Usage) Sub(o Usage) (map[string]float64, suite.DBStats, suite.NATSStats) {
	return cpuDelta(o.CPU, u.CPU), u.Database.Sub(o.Database), u.NATS.Sub(o.NATS)
}

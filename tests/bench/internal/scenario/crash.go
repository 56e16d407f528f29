package scenario

import (
	"context"
	"errors"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// The crash scenario: the process that delivers (Sundial's dispatcher,
// riverbase) is killed in a burst, as a node's loss or an OOM kill would,
// and a new one is started as an orchestrator would (issue 41).
const (
	// crashAt is the share of the burst arrived when the dispatcher is
	// killed: in the middle of its deliveries on a machine of any speed
	// (a fixed instant after the burst's found a fast one done).
	crashAt = 0.25
	// crashPoll is how often the arrivals are counted until then.
	crashPoll = time.Millisecond
	// crashDown is how long no dispatcher runs: an orchestrator noticing
	// the death and starting a new one.
	crashDown = 1500 * time.Millisecond
	// crashDeadline bounds the wait for the last hook: the hooks the
	// killed dispatcher held come back when their leases (30 s) expire,
	// the jobs riverbase was working when river's rescuer hands them back.
	crashDeadline = 3 * time.Minute
	// crashRescueAfter is the baseline's RescueStuckJobsAfter in the crash
	// run: the least above its JobTimeout (15 s), as a team expecting
	// crashes would set it; river's default (1 h) would leave the jobs a
	// killed process was working stuck past any run.
	crashRescueAfter = "20s"
)

// crashShape is when the process is killed (once arrivals hooks have
// arrived) and for how long none runs.
type crashShape struct {
	arrivals int
	down     time.Duration
}

// crashPlan is the crash scenario's plan: a burst of c.CrashSize hooks.
func crashPlan(c Config) plan {
	shape := &crashShape{arrivals: max(int(crashAt*float64(c.CrashSize)), 1), down: crashDown}
	return plan{
		name: "crash", hooks: c.CrashSize, deadline: crashDeadline, crash: shape,
		baselineEnv: map[string]string{"RIVERBASE_RESCUE_AFTER": crashRescueAfter},
	}
}

// crasher is an instance whose delivering process can be killed and
// started again.
type crasher interface {
	// Kill kills the process that delivers with SIGKILL and returns its
	// name.
	Kill() string
	// StartKilled starts it again and waits until it is ready.
	StartKilled(ctx context.Context) error
}

// crashed is what the kill and the restart did.
type crashed struct {
	process                  string
	killed, restarted, ready time.Time
	arrived                  int
	err                      error
}

// run kills the dispatcher once c.arrivals hooks have arrived, at t0 or
// later, and starts it again down later.
func (c *crashShape) run(ctx context.Context, in Instance, t0 time.Time) crashed {
	k, ok := in.(crasher)
	if !ok {
		return crashed{err: errors.New("crash: the instance cannot kill its processes")}
	}
	if err := waitUntil(ctx, t0); err != nil {
		return crashed{err: err}
	}
	if err := waitCount(ctx, in.Receiver().Count, c.arrivals); err != nil {
		return crashed{err: err}
	}
	var out crashed
	out.process = k.Kill()
	out.killed = time.Now()
	out.arrived = in.Receiver().Count()
	if err := waitUntil(ctx, out.killed.Add(c.down)); err != nil {
		return crashed{err: err}
	}
	out.restarted = time.Now()
	out.err = k.StartKilled(ctx)
	out.ready = time.Now()
	return out
}

// waitCount waits until count() reaches n, or ctx ends (the scenario's
// deadline bounds it).
func waitCount(ctx context.Context, count func() int, n int) error {
	tick := time.NewTicker(crashPoll)
	defer tick.Stop()
	for count() < n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// figures are the crash's times after the instant t0.
func (c crashed) figures(t0 time.Time) *report.Crash {
	return &report.Crash{
		Process:           c.process,
		KilledMs:          stats.Ms(c.killed.Sub(t0)),
		RestartedMs:       stats.Ms(c.restarted.Sub(t0)),
		ReadyMs:           stats.Ms(c.ready.Sub(t0)),
		ArrivedBeforeKill: c.arrived,
	}
}

// Kill kills the dispatcher.
func (in *sundial) Kill() string {
	in.s.KillService("dispatcher")
	return "dispatcher"
}

// StartKilled starts the dispatcher again.
func (in *sundial) StartKilled(ctx context.Context) error {
	return in.s.StartKilledService(ctx, "dispatcher")
}

// Kill kills riverbase.
func (in *river) Kill() string {
	in.b.Kill()
	return "riverbase"
}

// StartKilled starts riverbase again.
func (in *river) StartKilled(ctx context.Context) error { return in.b.StartKilled(ctx) }

// Package scenario is the benchmark's scenarios and the run that each one
// shares: start a fresh system (Sundial, or the river baseline it is
// compared with), schedule the hooks ahead of time, wait while they are
// delivered, and compare what the receiver saw with what was scheduled.
// Scenarios and systems are registries: `make bench-compare` runs every
// delivery scenario on each system in turn.
package scenario

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// Scenario is one row of the report, or one row per system.
type Scenario struct {
	Name        string
	Description func(Config) string
	// Plan shapes a delivery scenario, which runs on every configured
	// system; nil for a scenario of Sundial's API alone.
	Plan func(Config) plan
	// Run runs a scenario without a Plan.
	Run func(ctx context.Context, e *Env) (report.Result, error)
	// Sequence says the scenario measures sequences (its figures are the
	// Result's Sequence); it runs on Sundial alone.
	Sequence bool
	// CLI says the scenario runs the `sundial` command, which is built
	// only when a scenario that runs it is selected.
	CLI bool
	// Pages says the scenario times the dashboard's pages (its figures are
	// the Result's Dashboard); it runs on Sundial alone.
	Pages bool
	// Retention says the scenario measures the retention cleaner (its
	// figures are the Result's Retention); it runs on Sundial alone.
	Retention bool
	// RealWorld says the scenario stands for real receivers and real
	// failures (realistic, crash: the Result's Realistic or Crash), which
	// take longer than the others; cmd/bench's TestQuickRealWorld runs
	// them.
	RealWorld bool
	// Ordering says the scenario measures ordering keys, or is their
	// baseline (the Result's Ordering): a delivery scenario on Sundial
	// alone, river having no ordering keys, compared with the baseline and
	// the burst and steady rows of the same run; cmd/bench's
	// TestQuickBenchmark runs it beside them.
	Ordering bool
	// BulkJob says the scenario measures a bulk job (the Result's
	// BulkJob): a delivery scenario on Sundial alone, whose job is the
	// gateway's, compared with the steady row of the same run;
	// cmd/bench's TestQuickBenchmark runs it beside it.
	BulkJob bool
}

// scaleDeadline is how long a scale or burst run may wait for its last
// hook after its last postAt.
const scaleDeadline = 10 * time.Minute

// Registry lists the scenarios in the order they run.
var Registry = []Scenario{
	{
		Name: "schedule",
		Description: func(c Config) string {
			return fmt.Sprintf("POST /v1/hooks closed loop, %d clients, %d s, hooks due next year", c.Clients, c.ScheduleSeconds)
		},
		Run: func(ctx context.Context, e *Env) (report.Result, error) { return e.schedule(ctx) },
	},
	{
		Name: "batch-intake",
		Description: func(c Config) string {
			return fmt.Sprintf("POST /v1/hooks/batch of %d hooks closed loop, %d clients, %d s, hooks due next year; COPY of %d hooks",
				batchSize, c.BatchClients, c.BatchSeconds, c.BatchCopyRows)
		},
		Run: func(ctx context.Context, e *Env) (report.Result, error) { return e.batchIntake(ctx) },
	},
	{
		Name:        "burst",
		Description: func(c Config) string { return fmt.Sprintf("%d hooks due at the same instant", c.BurstSize) },
		Plan: func(c Config) plan {
			return plan{name: "burst", hooks: c.BurstSize, deadline: scaleDeadline, profile: true}
		},
	},
	{
		Name: "steady",
		Description: func(c Config) string {
			return fmt.Sprintf("%d hooks/s due continuously for %d s", c.SteadyRate, c.SteadySeconds)
		},
		Plan: func(c Config) plan { return steady("steady", c, 0) },
	},
	{
		Name: "ordering",
		Description: func(c Config) string {
			o := orderingOf(c)
			return fmt.Sprintf("%d ordering keys x %d hooks due at the same instant, beside %d plain hooks/s and another project's %d for %d s; signatures verified",
				o.keys, o.perKey, o.rate, o.otherRate(), o.flowSeconds)
		},
		Run: func(ctx context.Context, e *Env) (report.Result, error) {
			return e.deliver(ctx, Systems[0], orderingPlan("ordering", e.Cfg, false))
		},
		Ordering: true,
	},
	{
		Name: "ordering-plain",
		Description: func(c Config) string {
			o := orderingOf(c)
			return fmt.Sprintf("ordering's baseline: the same %d hooks due at the same instant with no ordering key, beside the same flows",
				o.keyed())
		},
		Run: func(ctx context.Context, e *Env) (report.Result, error) {
			return e.deliver(ctx, Systems[0], orderingPlan("ordering-plain", e.Cfg, true))
		},
		Ordering: true,
	},
	{
		Name: "bulk-job",
		Description: func(c Config) string {
			b := bulkJobOf(c)
			return fmt.Sprintf("a bulk cancel job over %d far-future pending hooks, created %s into %d plain hooks/s for %d s",
				b.rows, b.start, b.rate, b.flowSeconds)
		},
		Run: func(ctx context.Context, e *Env) (report.Result, error) {
			return e.deliver(ctx, Systems[0], bulkJobPlan(e.Cfg))
		},
		BulkJob: true,
	},
	{
		Name: "scale-1m",
		Description: func(c Config) string {
			return fmt.Sprintf("steady with %d far-future pending hooks in the table", c.Scale1MRows)
		},
		Plan: func(c Config) plan { return steady("scale-1m", c, c.Scale1MRows) },
	},
	{
		Name: "scale-10m",
		Description: func(c Config) string {
			return fmt.Sprintf("steady with %d far-future pending hooks in the table", c.Scale10MRows)
		},
		Plan: func(c Config) plan { return steady("scale-10m", c, c.Scale10MRows) },
	},
	{
		Name: "scale-10m-high",
		Description: func(c Config) string {
			return fmt.Sprintf("%d hooks/s due continuously for %d s with %d far-future pending hooks in the table",
				c.ScaleHighRate, c.SteadySeconds, c.Scale10MRows)
		},
		Plan: func(c Config) plan {
			c.SteadyRate = c.ScaleHighRate
			return steady("scale-10m-high", c, c.Scale10MRows)
		},
	},
	{
		Name:        "same-second",
		Description: func(c Config) string { return fmt.Sprintf("%d hooks due in the same instant", c.SameSecondSize) },
		Plan: func(c Config) plan {
			return plan{name: "same-second", hooks: c.SameSecondSize, deadline: time.Minute}
		},
	},
	{
		Name: "realistic",
		Description: func(c Config) string {
			hang := ", never (12 s)"
			if !realisticOf(c).hanging {
				hang = ""
			}
			return fmt.Sprintf("%d hooks/s for %d s and %d at one instant every %d s, to one receiver whose paths answer 200 in 1-50 ms, 500, in 1-5 s%s or 202; signatures verified; 3%% of the healthy paths' hooks fail once",
				c.RealisticRate, c.RealisticSeconds, c.RealisticBurst, c.RealisticBurstEvery, hang)
		},
		Plan: func(c Config) plan {
			r := realisticOf(c)
			return plan{name: "realistic", hooks: r.hooks(), deadline: realisticDeadline, realistic: r, profile: true}
		},
		RealWorld: true,
	},
	{
		Name: "crash",
		Description: func(c Config) string {
			return fmt.Sprintf("%d hooks due at one instant; the delivering process (dispatcher, riverbase) killed (SIGKILL) once %.0f%% of them arrived, a new one started %s later",
				c.CrashSize, 100*crashAt, crashDown)
		},
		Plan:      crashPlan,
		RealWorld: true,
	},
	{
		Name: "listen",
		Description: func(c Config) string {
			return fmt.Sprintf("through one sundial listen: %d hooks due at one instant, %d hooks/s for %d s (and the same over HTTPS); %d idle listeners",
				c.ListenBurstSize, c.ListenSteadyRate, c.ListenSteadySeconds, c.ListenIdle)
		},
		Run: func(ctx context.Context, e *Env) (report.Result, error) { return e.listen(ctx) },
		CLI: true,
	},
	{
		Name: "sequences",
		Description: func(c Config) string {
			return fmt.Sprintf("%d sequences due at the same slot, one root step each", c.Sequences)
		},
		Run:      func(ctx context.Context, e *Env) (report.Result, error) { return e.sequences(ctx) },
		Sequence: true,
	},
	{
		Name: "sequence-memory",
		Description: func(c Config) string {
			return fmt.Sprintf("scheduler peak RSS over %d s of %d hooks/s, with 0 and %d far-future sequences", c.SequenceMemorySeconds, c.SteadyRate, c.SequenceMemoryRows)
		},
		Run:      func(ctx context.Context, e *Env) (report.Result, error) { return e.sequenceMemory(ctx) },
		Sequence: true,
	},
	{
		Name: "sequence-preview",
		Description: func(c Config) string {
			return fmt.Sprintf("%d sequential POST /v1/sequences/preview and GET /v1/sequences/{id}/preview, count=%d", c.SequencePreviewRequests, previewCount)
		},
		Run:      func(ctx context.Context, e *Env) (report.Result, error) { return e.sequencePreview(ctx) },
		Sequence: true,
	},
	{
		Name: "retention-off",
		Description: func(c Config) string {
			return fmt.Sprintf("steady with %d expired hooks (and their attempts) in the table, the cleaner off", c.RetentionRows)
		},
		Run: func(ctx context.Context, e *Env) (report.Result, error) {
			return e.deliver(ctx, Systems[0], retention("retention-off", e.Cfg, false))
		},
		Retention: true,
	},
	{
		Name: "retention-on",
		Description: func(c Config) string {
			return fmt.Sprintf("steady with %d expired hooks (and their attempts) in the table, the cleaner deleting them", c.RetentionRows)
		},
		Run: func(ctx context.Context, e *Env) (report.Result, error) {
			return e.deliver(ctx, Systems[0], retention("retention-on", e.Cfg, true))
		},
		Retention: true,
	},
	{
		Name: "dashboard",
		Description: func(c Config) string {
			return fmt.Sprintf("%d sequential requests of each dashboard page, on a project with %d hooks over 7 days", c.DashboardRequests, c.DashboardHooks)
		},
		Run:   func(ctx context.Context, e *Env) (report.Result, error) { return e.dashboard(ctx) },
		Pages: true,
	},
}

// NeedsCLI says whether one of the scenarios named runs the `sundial`
// command.
func NeedsCLI(names []string) bool {
	for _, s := range Registry {
		if s.CLI && slices.Contains(names, s.Name) {
			return true
		}
	}
	return false
}

// steady is the steady scenario's plan with backlog far-future hooks.
func steady(name string, c Config, backlog int) plan {
	return plan{
		name:     name,
		hooks:    c.SteadyRate * c.SteadySeconds,
		spread:   time.Duration(c.SteadySeconds) * time.Second,
		backlog:  backlog,
		deadline: time.Minute,
		profile:  true,
	}
}

// retention is the steady plan with c.RetentionRows expired hooks loaded
// first. Without the cleaner, SUNDIAL_SCHEDULER_RETENTION_INTERVAL=0 turns
// it off: the run is the comparison's reference, not a tuning of the
// measured one, which runs with the defaults.
func retention(name string, c Config, cleaner bool) plan {
	p := steady(name, c, 0)
	p.expired = c.RetentionRows
	if !cleaner {
		p.env = map[string]string{retentionInterval: "0"}
	}
	return p
}

// retentionInterval is the scheduler's setting of the cleaner's period.
const retentionInterval = "SUNDIAL_SCHEDULER_RETENTION_INTERVAL"

// Names lists the registered scenarios.
func Names() []string {
	var out []string
	for _, s := range Registry {
		out = append(out, s.Name)
	}
	return out
}

// Env is what scenarios share: the configuration, the built binaries and
// the log.
type Env struct {
	Cfg Config
	Bin suite.Binaries
	// RiverBin is the baseline's program (cmd/riverbase), when it runs.
	RiverBin string
	Log      *slog.Logger
	// Settings collects each system's settings in the scenarios run.
	Settings map[string]map[string]string
}

// Run runs the configured scenarios in registry order, each delivery
// scenario on every configured system in turn; a run that fails is
// reported and the others still run.
func (e *Env) Run(ctx context.Context) []report.Result {
	if e.Settings == nil {
		e.Settings = map[string]map[string]string{}
	}
	var out []report.Result
	for _, s := range Registry {
		if !slices.Contains(e.Cfg.Scenarios, s.Name) {
			continue
		}
		if s.Plan == nil {
			out = append(out, e.runOne(ctx, s, SystemNames()[0], func(ctx context.Context) (report.Result, error) { return s.Run(ctx, e) }))
			continue
		}
		for _, sys := range Systems {
			if !slices.Contains(e.Cfg.Systems, sys.Name) {
				continue
			}
			out = append(out, e.runOne(ctx, s, sys.Name, func(ctx context.Context) (report.Result, error) {
				return e.deliver(ctx, sys, s.Plan(e.Cfg))
			}))
		}
	}
	report.CompareWithSteady(out)
	report.CompareSequencesWithBurst(out)
	report.BatchGoals(out)
	report.CompareRetention(out)
	report.CompareOrdering(out)
	report.CompareBulkJob(out)
	return out
}

// runOne runs one scenario on one system, unless the run is cancelled.
func (e *Env) runOne(ctx context.Context, s Scenario, system string, run func(context.Context) (report.Result, error)) report.Result {
	res := report.Result{Scenario: s.Name, System: system, Description: s.Description(e.Cfg)}
	if err := ctx.Err(); err != nil {
		res.Notes = append(res.Notes, "not run: "+err.Error())
		return res
	}
	e.Log.Info("scenario starting", "scenario", s.Name, "system", system, "what", res.Description)
	start := time.Now()
	res, err := run(ctx)
	res.Scenario, res.System, res.Description = s.Name, system, s.Description(e.Cfg)
	res.DurationSeconds = time.Since(start).Round(time.Second).Seconds()
	if err != nil {
		res.OK = false
		res.Notes = append(res.Notes, "failed: "+err.Error())
		e.Log.Error("scenario failed", "scenario", s.Name, "system", system, "err", err)
	}
	e.Log.Info("scenario done", "scenario", s.Name, "system", system, "ok", res.OK, "seconds", res.DurationSeconds)
	return res
}

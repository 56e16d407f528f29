// Package scenario is the benchmark's scenarios and the run that each one
// shares: start a fresh suite, schedule the hooks through the API ahead of
// time, wait while they are delivered, and compare what the receiver saw
// with what was scheduled. Scenarios are a registry, so that new ones (a
// river baseline, an API-only schedule run) slot in beside these.
package scenario

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// Scenario is one row of the report.
type Scenario struct {
	Name        string
	Description func(Config) string
	Run         func(ctx context.Context, e *Env) (report.Result, error)
}

// Registry lists the scenarios in the order they run.
var Registry = []Scenario{
	{
		Name:        "same-second",
		Description: func(c Config) string { return fmt.Sprintf("%d hooks due in the same instant", c.SameSecondSize) },
		Run: func(ctx context.Context, e *Env) (report.Result, error) {
			return e.deliver(ctx, plan{name: "same-second", hooks: e.Cfg.SameSecondSize, deadline: 60 * time.Second})
		},
	},
	{
		Name: "steady",
		Description: func(c Config) string {
			return fmt.Sprintf("%d hooks/s due continuously for %d s", c.SteadyRate, c.SteadySeconds)
		},
		Run: func(ctx context.Context, e *Env) (report.Result, error) {
			return e.deliver(ctx, plan{
				name:     "steady",
				hooks:    e.Cfg.SteadyRate * e.Cfg.SteadySeconds,
				spread:   time.Duration(e.Cfg.SteadySeconds) * time.Second,
				deadline: 60 * time.Second,
			})
		},
	},
	{
		Name:        "burst",
		Description: func(c Config) string { return fmt.Sprintf("%d hooks due at the same instant", c.BurstSize) },
		Run: func(ctx context.Context, e *Env) (report.Result, error) {
			return e.deliver(ctx, plan{name: "burst", hooks: e.Cfg.BurstSize, deadline: 10 * time.Minute, profile: true})
		},
	},
	{
		Name: "backlog",
		Description: func(c Config) string {
			return fmt.Sprintf("%d hooks due at the same instant, %d far-future pending hooks in the table", c.BurstSize, c.BacklogRows)
		},
		Run: func(ctx context.Context, e *Env) (report.Result, error) {
			return e.deliver(ctx, plan{name: "backlog", hooks: e.Cfg.BurstSize, backlog: e.Cfg.BacklogRows, deadline: 10 * time.Minute, profile: true})
		},
	},
}

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
	Log *slog.Logger
	// Settings collects the service settings of the scenarios run.
	Settings map[string]string
}

// Run runs the configured scenarios in registry order; a scenario that
// fails is reported and the others still run.
func (e *Env) Run(ctx context.Context) []report.Result {
	var out []report.Result
	for _, s := range Registry {
		if !contains(e.Cfg.Scenarios, s.Name) || ctx.Err() != nil {
			continue
		}
		e.Log.Info("scenario starting", "scenario", s.Name, "what", s.Description(e.Cfg))
		start := time.Now()
		res, err := s.Run(ctx, e)
		res.Scenario, res.Description = s.Name, s.Description(e.Cfg)
		res.DurationSeconds = time.Since(start).Round(time.Second).Seconds()
		if err != nil {
			res.OK = false
			res.Notes = append(res.Notes, "failed: "+err.Error())
			e.Log.Error("scenario failed", "scenario", s.Name, "err", err)
		}
		e.Log.Info("scenario done", "scenario", s.Name, "ok", res.OK, "seconds", res.DurationSeconds)
		out = append(out, res)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

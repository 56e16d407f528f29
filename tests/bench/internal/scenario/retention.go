package scenario

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/sundial-run/sundial/tests/bench/internal/logscan"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// expiredSuite starts the suite for a retention scenario: p.expired
// finished hooks that expired long ago, each with its attempt, are
// inserted before the services start (so the cleaner, whose first pass is
// at the scheduler's start, finds them all), and p.env is added to the
// services' settings.
func expiredSuite(ctx context.Context, e *Env, p plan, dir string, arrivals int, loaded **suite.ExpiredLoad) (*suite.Suite, error) {
	env := maps.Clone(e.Cfg.ServiceEnv)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, p.env)
	return suite.Start(ctx, suite.Options{
		Scenario: p.name, Dir: dir, AdminURL: e.Cfg.AdminURL, Bin: e.Bin,
		Arrivals: arrivals, ServiceEnv: env, KeepDatabase: e.Cfg.KeepDatabase,
		Prepare: func(ctx context.Context, dbURL string, project suite.Credentials, domain string) error {
			l, err := suite.LoadExpired(ctx, dbURL, project.ProjectID, domain, p.expired)
			*loaded = &l
			e.Log.Info("expired hooks loaded", "scenario", p.name, "hooks", l.Hooks, "attempts", l.Attempts,
				"seconds", l.Seconds, "insert_seconds", l.InsertSeconds, "vacuum_seconds", l.VacuumSeconds, "triggers", l.Triggers)
			if err != nil {
				return err
			}
			e.checkpoint(ctx, p.name, "sundial")
			return nil
		},
	})
}

// retention reads, once the services stopped, what the cleaner deleted
// before, during and after the window (its log lines) and what expired
// rows are left (the database).
func (in *sundial) retention(ctx context.Context, res *report.Result) *report.Retention {
	r := &report.Retention{Cleaner: in.p.env[retentionInterval] != "0", Load: *in.expired,
		LoadAverage: []string{in.loadAtT0, loadAverage()}}
	from, to := res.Check.FirstPostAt, res.Check.LastArrival
	r.WindowSeconds = float64(to.Sub(from).Milliseconds()) / 1000
	passes, err := logscan.ScanFields(in.s.Services["scheduler"].LogPath, "expired hooks deleted", "hooks_deleted", "attempts_deleted")
	if err != nil {
		res.Notes = append(res.Notes, "cleaner's log: "+err.Error())
	}
	r.Before, r.Window, r.After = report.SplitDeletions(passes, from, to)
	hooks, attempts, err := suite.CountExpired(ctx, in.s.DBURL, in.s.Project.ProjectID)
	if err != nil {
		res.Notes = append(res.Notes, err.Error())
	}
	r.Remaining = report.Deleted{Hooks: hooks, Attempts: attempts}
	deleted := r.Before.Hooks + r.Window.Hooks + r.After.Hooks
	unlogged := int64(r.Load.Hooks) - deleted - hooks
	batch := int64(retentionBatch(in.s.Settings))
	r.OK = err == nil && unlogged >= 0 && unlogged <= batch && (r.Cleaner || deleted == 0 && unlogged == 0)
	switch {
	case !r.Cleaner && deleted+unlogged != 0:
		res.Notes = append(res.Notes, fmt.Sprintf("the cleaner was off but %d hooks were deleted", int64(r.Load.Hooks)-hooks))
	case unlogged < 0 || unlogged > batch:
		res.Notes = append(res.Notes, fmt.Sprintf("the cleaner logged %d hooks deleted, but %d of %d expired hooks are left", deleted, hooks, r.Load.Hooks))
	case unlogged > 0:
		// A statement that commits as the scheduler stops returns the
		// cancellation, not its count, so its pass's line leaves it out.
		res.Notes = append(res.Notes, fmt.Sprintf("%d expired hooks were deleted without a log line: the statement in flight when the scheduler stopped (after the window)", unlogged))
	case r.Cleaner && hooks == 0 && len(passes) > 0 && passes[len(passes)-1].At.Before(to):
		res.Notes = append(res.Notes, fmt.Sprintf("the cleaner deleted the last expired hook %.1f s before the window's end: it was idle for the rest (BENCH_RETENTION_ROWS is too small to keep it busy)",
			to.Sub(passes[len(passes)-1].At).Seconds()))
	}
	return r
}

// retentionBatch is the cleaner's statement size in settings, or its
// default.
func retentionBatch(settings map[string]string) int {
	if n, err := strconv.Atoi(settings["SUNDIAL_SCHEDULER_RETENTION_BATCH"]); err == nil && n > 0 {
		return n
	}
	return defaultRetentionBatch
}

// defaultRetentionBatch is the scheduler's default
// SUNDIAL_SCHEDULER_RETENTION_BATCH (docs/operations.md, "Retention").
const defaultRetentionBatch = 1000

package scenario

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// appliedWait bounds the wait for the last results after the last arrival.
const appliedWait = 3 * time.Minute

// sundial is the suite: four services, NATS, hooks created through the API.
type sundial struct {
	s        *suite.Suite
	client   *load.Client
	e        *Env
	p        plan
	profiled chan []string
	backlog  *suite.BacklogLoad
	// expired is how the retention scenarios' expired hooks were loaded,
	// and loadAtT0 the load average once the hooks were created, just
	// before the first postAt.
	expired  *suite.ExpiredLoad
	loadAtT0 string
}

// sundialSuite starts the suite for scenario in dir; a backlog of far-future
// hooks is copied in before the services start, and how is kept in loaded.
func sundialSuite(ctx context.Context, e *Env, scenario, dir string, arrivals, backlog int, loaded **suite.BacklogLoad) (*suite.Suite, error) {
	opts := suite.Options{
		Scenario: scenario, Dir: dir, AdminURL: e.Cfg.AdminURL, Bin: e.Bin,
		Arrivals: arrivals, ServiceEnv: e.Cfg.ServiceEnv, KeepDatabase: e.Cfg.KeepDatabase,
	}
	if backlog > 0 {
		opts.Prepare = func(ctx context.Context, dbURL string, project suite.Credentials, domain string) error {
			l, err := suite.LoadBacklog(ctx, dbURL, project.ProjectID, domain, backlog)
			*loaded = &l
			e.Log.Info("backlog loaded", "scenario", scenario, "how", backlogNote(l))
			if err != nil {
				return err
			}
			e.checkpoint(ctx, scenario, "sundial")
			return nil
		}
	}
	return suite.Start(ctx, opts)
}

func backlogNote(l suite.BacklogLoad) string {
	return fmt.Sprintf("%d rows loaded in %.1f s (COPY %.1f s with %d connections, triggers %v; ANALYZE %.1f s)",
		l.Rows, l.Seconds, l.CopySeconds, l.Workers, l.Triggers, l.AnalyzeSeconds)
}

func startSundial(ctx context.Context, e *Env, p plan, dir string, arrivals int) (Instance, error) {
	in := &sundial{e: e, p: p, profiled: make(chan []string, 1)}
	var (
		s   *suite.Suite
		err error
	)
	if p.expired > 0 {
		s, err = expiredSuite(ctx, e, p, dir, arrivals, &in.expired)
	} else {
		s, err = sundialSuite(ctx, e, p.name, dir, arrivals, p.backlog, &in.backlog)
	}
	if err != nil {
		return nil, err
	}
	in.s, in.client = s, load.NewClient(s.APIBase, s.Project.APIKey, e.Cfg.Clients)
	return in, nil
}

func (in *sundial) Receiver() *receiver.Receiver { return in.s.Receiver }

func (in *sundial) Schedule(ctx context.Context, postAts []time.Time, path string) ([]check.Hook, load.Created, error) {
	return in.client.CreateAll(ctx, postAts, in.e.Cfg.Clients, path)
}

func (in *sundial) ScheduleSpecs(ctx context.Context, specs []load.Spec) ([]check.Hook, load.Created, error) {
	return in.client.CreateSpecs(ctx, specs, in.e.Cfg.Clients)
}

// API is the project's client of the gateway, for requests beside the
// hooks' creation.
func (in *sundial) API() *load.Client { return in.client }

// CreateProject makes another project whose domain is the receiver's.
func (in *sundial) CreateProject(ctx context.Context, name string) (suite.Credentials, error) {
	return in.s.CreateProject(ctx, name, in.s.Receiver.Domain())
}

// SigningKey is the project's: Sundial signs with it.
func (in *sundial) SigningKey() string { return in.s.Project.SigningKey }

// BeginDelivery stops the gateway, which has no part in delivering, so
// that the delivery phase's database and CPU figures are the delivery
// path's alone, and starts the profiles when asked for. A plan with a bulk
// job keeps the gateway: its runner works the job.
func (in *sundial) BeginDelivery(ctx context.Context, t0 time.Time) []string {
	var notes []string
	if in.p.bulkJob == nil {
		if err := in.s.StopService("gateway"); err != nil {
			notes = append(notes, "gateway stop: "+err.Error())
		}
	}
	in.loadAtT0 = loadAverage()
	if !in.p.profile || !in.e.Cfg.Pprof {
		in.profiled <- nil
		return notes
	}
	go func() {
		if err := waitUntil(ctx, t0); err != nil {
			in.profiled <- nil
			return
		}
		files, err := in.s.Profile(ctx, filepath.Join(in.e.Cfg.Dir, "pprof"), in.p.name, time.Duration(in.e.Cfg.PprofSeconds)*time.Second, "scheduler", "dispatcher", "notifier")
		if err != nil {
			in.e.Log.Warn("profile", "err", err)
		}
		in.profiled <- files
	}()
	return notes
}

func (in *sundial) Usage(ctx context.Context) Usage {
	db, _ := in.s.DatabaseStats(ctx)
	nats, _ := in.s.NATSStats(ctx)
	return Usage{CPU: in.s.CPU(), Database: db, NATS: nats}
}

func (in *sundial) PeakRSS() map[string]int64 { return in.s.PeakRSS() }

// Settle waits for the scheduler to apply every result, then stops the
// delivery services; the database counters are read once their
// connections are gone, so that their last counts are in.
func (in *sundial) Settle(ctx context.Context, hooks int, res *report.Result) (Usage, map[string]int64) {
	applied := waitApplied(ctx, in.s.Services["scheduler"].LogPath, hooks, time.Now().Add(appliedWait))
	if applied < hooks {
		res.Notes = append(res.Notes, fmt.Sprintf("only %d of %d results applied within %s of the last arrival", applied, hooks, appliedWait))
	}
	cpu := in.s.CPU()
	nats, _ := in.s.NATSStats(ctx)
	rss := in.s.PeakRSS()
	res.Profiles = <-in.profiled
	names := []string{"dispatcher", "scheduler", "notifier"}
	if in.p.bulkJob != nil {
		// Kept up for the bulk job; stopped with the others so that the
		// database counters wait for its connections too.
		names = append(names, "gateway")
	}
	for _, name := range names {
		if err := in.s.StopService(name); err != nil {
			res.Notes = append(res.Notes, name+" stop: "+err.Error())
		}
	}
	db, _ := in.s.DatabaseStats(ctx)
	res.Stages = stages(in.s, res.Check.FirstPostAt, time.Time{}, res.Check)
	if in.expired != nil {
		res.Retention = in.retention(ctx, res)
	}
	return Usage{CPU: cpu, Database: db, NATS: nats}, rss
}

func (in *sundial) Settings() map[string]string { return in.s.Settings }

func (in *sundial) Close(ctx context.Context) error { return in.s.Close(ctx) }

func (in *sundial) Backlog() *suite.BacklogLoad { return in.backlog }

// checkpoint writes back what a backlog load left dirty before the
// measurement starts; when it may not, the run goes on and says so.
func (e *Env) checkpoint(ctx context.Context, scenario, system string) {
	t := time.Now()
	if err := suite.Checkpoint(ctx, e.Cfg.AdminURL); err != nil {
		e.Log.Warn("checkpoint after the backlog failed; its write-back may fall in the measurement",
			"scenario", scenario, "system", system, "err", err)
		return
	}
	e.Log.Info("checkpoint after the backlog", "scenario", scenario, "system", system, "seconds", since(t))
}

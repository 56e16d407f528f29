package scenario

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/logscan"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// plan shapes one delivery scenario.
type plan struct {
	name  string
	hooks int
	// spread spaces the postAts evenly over [t0, t0+spread); 0 puts them
	// all at t0.
	spread time.Duration
	// backlog far-future pending hooks are loaded by COPY before the
	// services start.
	backlog int
	// deadline is how long after the last postAt the run waits for every
	// hook to arrive.
	deadline time.Duration
	// profile takes CPU profiles of the scheduler and dispatcher during
	// delivery when BENCH_PPROF=1.
	profile bool
}

// createMargin divides the measured create rate when choosing the first
// postAt, so that creation is over before any hook is due.
const createMargin = 0.7

// arrivalRoom is the receiver's capacity per scheduled hook: room for
// re-driven duplicates (a run whose leases expire under load has shown five
// deliveries per hook) at 32 bytes an arrival.
const arrivalRoom = 10

// appliedWait bounds the wait for the last results after the last arrival.
const appliedWait = 3 * time.Minute

// deliver runs one delivery scenario on a fresh suite.
func (e *Env) deliver(ctx context.Context, p plan) (res report.Result, err error) {
	res = report.Result{Hooks: p.hooks, Backlog: p.backlog}
	dir := filepath.Join(e.Cfg.Dir, p.name)
	if err := os.RemoveAll(dir); err != nil {
		return res, err
	}
	opts := suite.Options{
		Scenario: p.name, Dir: dir, AdminURL: e.Cfg.AdminURL, Bin: e.Bin,
		Arrivals: arrivalRoom*p.hooks + 1000, ServiceEnv: e.Cfg.ServiceEnv, KeepDatabase: e.Cfg.KeepDatabase,
	}
	if p.backlog > 0 {
		opts.Prepare = func(ctx context.Context, dbURL string, project suite.Credentials, domain string) error {
			t0 := time.Now()
			err := suite.LoadBacklog(ctx, dbURL, project.ProjectID, domain, p.backlog)
			res.Notes = append(res.Notes, fmt.Sprintf("backlog: %d rows copied and analyzed in %.1f s", p.backlog, time.Since(t0).Seconds()))
			return err
		}
	}
	s, err := suite.Start(ctx, opts)
	if err != nil {
		return res, err
	}
	defer func() {
		if closeErr := s.Close(context.WithoutCancel(ctx)); closeErr != nil {
			res.Notes = append(res.Notes, "teardown: "+closeErr.Error())
		}
	}()
	e.Settings = s.Settings

	client := load.NewClient(s.APIBase, s.Project.APIKey, e.Cfg.Clients)
	rate, err := e.calibrate(ctx, client, p.hooks)
	if err != nil {
		return res, err
	}
	lead := time.Duration(float64(p.hooks)/(createMargin*rate)*float64(time.Second)) + 3*time.Second
	t0 := time.Now().Add(lead).Truncate(time.Millisecond)
	postAts := make([]time.Time, p.hooks)
	for i := range postAts {
		postAts[i] = t0.Add(time.Duration(int64(p.spread) / int64(p.hooks) * int64(i)))
	}
	e.Log.Info("creating hooks", "scenario", p.name, "hooks", p.hooks, "calibrated_rate", math.Round(rate), "first_post_at_in", lead.Round(time.Millisecond))
	hooks, created, err := client.CreateAll(ctx, postAts, e.Cfg.Clients, "/bench/"+p.name)
	res.Create = created
	if err != nil {
		return res, err
	}
	if created.Finished.After(t0) {
		res.Notes = append(res.Notes, fmt.Sprintf("creation ended %.1f s after the first postAt: lateness includes creation", created.Finished.Sub(t0).Seconds()))
	}
	// The gateway has no part in delivering: it is stopped once its work is
	// done (after its peak memory is read), so that the delivery phase's
	// database and CPU figures are the delivery path's alone.
	rss := s.PeakRSS()
	if err := s.StopService("gateway"); err != nil {
		res.Notes = append(res.Notes, "gateway stop: "+err.Error())
	}
	if err := waitUntil(ctx, t0); err != nil {
		return res, err
	}
	cpu0, db0, nats0 := s.CPU(), readDB(ctx, s), readNATS(ctx, s)
	profiled := make(chan []string, 1)
	if p.profile && e.Cfg.Pprof {
		go func() {
			files, err := s.Profile(ctx, filepath.Join(e.Cfg.Dir, "pprof"), p.name, time.Duration(e.Cfg.PprofSeconds)*time.Second, "scheduler", "dispatcher")
			if err != nil {
				e.Log.Warn("profile", "err", err)
			}
			profiled <- files
		}()
	} else {
		profiled <- nil
	}
	lastDue := postAts[len(postAts)-1]
	complete := waitDelivered(ctx, s.Receiver, hooks, lastDue.Add(p.deadline))
	if !complete {
		res.Notes = append(res.Notes, fmt.Sprintf("not every hook arrived within %s of the last postAt", p.deadline))
	}
	applied := waitApplied(ctx, s.Services["scheduler"].LogPath, len(hooks), time.Now().Add(appliedWait))
	cpu1, nats1 := s.CPU(), readNATS(ctx, s)
	for k, v := range s.PeakRSS() {
		rss[k] = max(rss[k], v)
	}
	res.Profiles = <-profiled
	for _, name := range []string{"dispatcher", "scheduler", "notifier"} {
		if err := s.StopService(name); err != nil {
			res.Notes = append(res.Notes, name+" stop: "+err.Error())
		}
	}
	db1 := readDB(ctx, s)

	res.Check = check.Compare(hooks, arrivalsOf(s.Receiver))
	if n := s.Receiver.Overflow(); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d arrivals beyond the receiver's capacity were not recorded", n))
	}
	fillTimes(&res)
	res.PeakRSSMiB = mib(rss)
	res.CPUSeconds = cpuDelta(cpu0, cpu1)
	res.Stages = stages(s, res.Check.FirstPostAt, res.Check)
	res.Database = db1.Sub(db0)
	res.NATS = nats1.Sub(nats0)
	res.PerHook = perHook(res)
	if applied < len(hooks) {
		res.Notes = append(res.Notes, fmt.Sprintf("only %d of %d results applied within %s of the last arrival", applied, len(hooks), appliedWait))
	}
	if res.Check.Duplicates > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d duplicate deliveries without any fault: leases expired while hooks or their results were queued, and the hooks were re-driven", res.Check.Duplicates))
	}
	res.OK = res.Check.Complete() && res.Check.Early == 0
	return res, nil
}

// calibrate measures the API's create rate on this machine with hooks due
// in a year (they stay in the table, a few thousand far-future rows), so
// that the scenario's postAt leaves just enough time to create its hooks.
func (e *Env) calibrate(ctx context.Context, c *load.Client, hooks int) (float64, error) {
	n := min(max(hooks/20, 500), 3000)
	at := time.Now().AddDate(1, 0, 0)
	postAts := make([]time.Time, n)
	for i := range postAts {
		postAts[i] = at
	}
	_, created, err := c.CreateAll(ctx, postAts, e.Cfg.Clients, "/calibrate")
	if err != nil {
		return 0, fmt.Errorf("calibrate: %w", err)
	}
	return created.PerSecond, nil
}

func waitUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// waitDelivered waits until every hook has arrived at least once, or the
// deadline; it says whether all arrived. It reads each arrival once, so
// that watching costs the machine next to nothing.
func waitDelivered(ctx context.Context, r *receiver.Receiver, hooks []check.Hook, deadline time.Time) bool {
	waiting := make(map[uuid.UUID]bool, len(hooks))
	for _, h := range hooks {
		waiting[h.ID] = true
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	next := 0
	for {
		var arrived []receiver.Arrival
		arrived, next = r.ArrivalsFrom(next)
		for _, a := range arrived {
			delete(waiting, a.ID)
		}
		if len(waiting) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// waitApplied waits until the scheduler has logged want applied results,
// or the deadline, and returns how many it logged.
func waitApplied(ctx context.Context, logPath string, want int, deadline time.Time) int {
	counter := logscan.NewCounter(logPath, "applied attempt results")
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		n, _ := counter.Poll()
		if n >= want || time.Now().After(deadline) {
			return n
		}
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
		}
	}
}

func arrivalsOf(r *receiver.Receiver) []check.Arrival {
	raw := r.Arrivals()
	out := make([]check.Arrival, len(raw))
	for i, a := range raw {
		out[i] = check.Arrival{ID: a.ID, At: r.At(a)}
	}
	return out
}

// fillTimes derives the throughput figures from the first arrivals.
func fillTimes(res *report.Result) {
	c := res.Check
	if c.Delivered == 0 {
		return
	}
	all := c.LastArrival.Sub(c.FirstPostAt)
	res.AllDeliveredSeconds = math.Round(all.Seconds()*1000) / 1000
	res.DeliveriesPerSecond = stats.PerSecond(c.Delivered, all)
	firsts := c.FirstArrivals()
	slices.SortFunc(firsts, func(a, b time.Time) int { return a.Compare(b) })
	lo, hi := len(firsts)/10, len(firsts)*9/10
	if hi > lo {
		res.SustainedPerSecond = stats.PerSecond(hi-lo, firsts[hi-1].Sub(firsts[lo]))
	}
}

func stages(s *suite.Suite, ref time.Time, c check.Outcome) []logscan.Stage {
	sched := s.Services["scheduler"].LogPath
	disp := s.Services["dispatcher"].LogPath
	var out []logscan.Stage
	for _, st := range []struct{ name, path, msg string }{
		{"claimed", sched, "claimed due hooks"},
		{"delivered", disp, "delivery"},
		{"result applied", sched, "applied attempt results"},
	} {
		events, err := logscan.Scan(st.path, st.msg)
		if err != nil {
			continue
		}
		out = append(out, logscan.Summarize(st.name, events, ref, time.Time{}))
	}
	// The receiver's view, for comparison with the dispatcher's log.
	var arrivals []logscan.Event
	for _, t := range c.FirstArrivals() {
		arrivals = append(arrivals, logscan.Event{At: t, Count: 1})
	}
	slices.SortFunc(arrivals, func(a, b logscan.Event) int { return a.At.Compare(b.At) })
	return append(out, logscan.Summarize("arrived", arrivals, ref, time.Time{}))
}

func readDB(ctx context.Context, s *suite.Suite) suite.DBStats {
	st, _ := s.DatabaseStats(ctx)
	return st
}

func readNATS(ctx context.Context, s *suite.Suite) suite.NATSStats {
	st, _ := s.NATSStats(ctx)
	return st
}

func mib(m map[string]int64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = math.Round(float64(v)/(1<<20)*10) / 10
	}
	return out
}

func cpuDelta(a, b map[string]time.Duration) map[string]float64 {
	out := map[string]float64{}
	for k, v := range b {
		out[k] = math.Round((v-a[k]).Seconds()*100) / 100
	}
	return out
}

func perHook(res report.Result) map[string]float64 {
	n := float64(res.Check.Delivered)
	if n == 0 {
		return nil
	}
	r := func(v int64) float64 { return math.Round(float64(v)/n*100) / 100 }
	out := map[string]float64{
		"pg commits":    r(res.Database.Commits),
		"pg rows upd":   r(res.Database.Updated),
		"pg rows ins":   r(res.Database.Inserted),
		"nats msgs in":  r(res.NATS.InMsgs),
		"nats msgs out": r(res.NATS.OutMsgs),
	}
	var cpu float64
	for k, v := range res.CPUSeconds {
		if k != "postgres" && k != "bench" {
			cpu += v
		}
	}
	out["service cpu µs"] = math.Round(cpu / n * 1e6)
	out["postgres cpu µs"] = math.Round(res.CPUSeconds["postgres"] / n * 1e6)
	return out
}

package scenario

import (
	"context"
	"fmt"
	"maps"
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
	// expired finished hooks, each with an attempt, that finished long
	// before the project's retention are inserted before the services
	// start (the retention scenarios; Sundial alone).
	expired int
	// env are settings for every service on top of the configured ones.
	env map[string]string
	// realistic, when set, shapes the hooks instead of spread (a flow with
	// bursts over paths of every kind, each hook with a fixed retry) and
	// makes the receiver answer as real ones do.
	realistic *realisticShape
	// crash, when set, kills the delivering process during the delivery
	// and starts it again.
	crash *crashShape
	// ordering, when set, shapes the hooks instead of spread (keyed hooks
	// due at one instant and a plain flow) and makes the receiver verify
	// signatures and paths (Sundial alone: river has no ordering keys).
	ordering *orderingShape
	// bulkJob, when set, creates a bulk cancel job over the backlog during
	// the delivery and waits for its end (Sundial alone: its runner is the
	// gateway's, which then stays up).
	bulkJob *bulkJobShape
	// baselineEnv are settings for the baseline on top of the configured
	// ones.
	baselineEnv map[string]string
}

// createMargin divides the measured create rate when choosing the first
// postAt, so that creation is over before any hook is due.
const createMargin = 0.7

// arrivalRoom is the receiver's capacity per scheduled hook: room for
// re-driven duplicates (a run whose leases expire under load has shown five
// deliveries per hook) at 32 bytes an arrival.
const arrivalRoom = 10

// deliver runs one delivery scenario on a fresh instance of sys.
func (e *Env) deliver(ctx context.Context, sys System, p plan) (res report.Result, err error) {
	res = report.Result{Hooks: p.hooks, Backlog: p.backlog}
	dir := filepath.Join(e.Cfg.Dir, p.name, sys.Name)
	if err := os.RemoveAll(dir); err != nil {
		return res, err
	}
	in, err := sys.Start(ctx, e, p, dir, arrivalRoom*p.hooks+1000)
	if err != nil {
		return res, err
	}
	defer func() {
		if closeErr := in.Close(context.WithoutCancel(ctx)); closeErr != nil {
			res.Notes = append(res.Notes, "teardown: "+closeErr.Error())
		}
	}()
	e.Settings[sys.Name] = in.Settings()
	res.BacklogLoad = in.Backlog()

	rate, err := calibrate(ctx, in, p.hooks)
	if err != nil {
		return res, err
	}
	lead := max(time.Duration(float64(p.hooks)/(createMargin*rate)*float64(time.Second))+3*time.Second, sys.MinLead)
	t0 := time.Now().Add(lead).Truncate(time.Millisecond)
	postAts := make([]time.Time, p.hooks)
	for i := range postAts {
		postAts[i] = t0.Add(time.Duration(int64(p.spread) / int64(p.hooks) * int64(i)))
	}
	specs := load.Specs(postAts, "/bench/"+p.name)
	if p.realistic != nil {
		specs = p.realistic.specs(p.realistic.postAts(t0))
	}
	var other suite.Credentials
	if p.ordering != nil {
		if other, err = createOther(ctx, in); err != nil {
			return res, err
		}
		specs = p.ordering.specs(t0, other.APIKey)
	}
	if p.realistic != nil || p.ordering != nil {
		postAts = postAts[:0]
		for _, s := range specs {
			postAts = append(postAts, s.PostAt)
		}
	}
	e.Log.Info("creating hooks", "scenario", p.name, "system", sys.Name, "hooks", p.hooks, "calibrated_rate", math.Round(rate), "first_post_at_in", lead.Round(time.Millisecond))
	hooks, created, err := in.ScheduleSpecs(ctx, specs)
	res.Create = created
	if err != nil {
		return res, err
	}
	want, results := expectOnce(hooks), len(hooks)
	if p.realistic != nil {
		in.Receiver().SetRealistic(p.realistic.receiver(hooks, in.SigningKey()))
		want, results = p.realistic.want(hooks)
	}
	if p.ordering != nil {
		in.Receiver().SetRealistic(p.ordering.receiver(hooks, in.SigningKey(), other.SigningKey))
	}
	if created.Finished.After(t0) {
		res.Notes = append(res.Notes, fmt.Sprintf("creation ended %.1f s after the first postAt: lateness includes creation", created.Finished.Sub(t0).Seconds()))
	}
	rss := in.PeakRSS()
	res.Notes = append(res.Notes, in.BeginDelivery(ctx, t0)...)
	crashed := make(chan crashed, 1)
	if p.crash != nil {
		go func() { crashed <- p.crash.run(ctx, in, t0) }()
	}
	jobCtx, stopJob := context.WithCancel(ctx)
	defer stopJob()
	jobDone := make(chan bulkJobRun, 1)
	if p.bulkJob != nil {
		api, ok := in.(apiInstance)
		if !ok {
			return res, errNoAPI
		}
		go func() { jobDone <- p.bulkJob.run(jobCtx, api.API(), t0) }()
	}
	if err := waitUntil(ctx, t0); err != nil {
		return res, err
	}
	u0 := in.Usage(ctx)
	// The ordering scenario's flow is created after its keyed hooks: the
	// last postAt is not the last hook's.
	lastDue := slices.MaxFunc(postAts, time.Time.Compare)
	if !waitArrivals(ctx, in.Receiver(), want, lastDue.Add(p.deadline)) {
		res.Notes = append(res.Notes, fmt.Sprintf("not every expected arrival came within %s of the last postAt", p.deadline))
		// The results to wait for are those of the attempts made, not of
		// those that never were.
		results = min(results, in.Receiver().Count())
	}
	if p.crash != nil {
		c := <-crashed
		if c.err != nil {
			return res, c.err
		}
		res.Crash = c.figures(t0)
	}
	var job bulkJobRun
	if p.bulkJob != nil {
		// The flow may end before the job: its own deadline bounds this.
		if job = <-jobDone; job.err != nil {
			return res, fmt.Errorf("bulk job: %w", job.err)
		}
	}
	arrived := arrivalsOf(in.Receiver())
	res.Check = check.Compare(hooks, arrived)
	if p.ordering != nil {
		if res.Ordering, err = p.ordering.figures(hooks, arrived, in.Receiver()); err != nil {
			return res, err
		}
	}
	if p.bulkJob != nil {
		res.BulkJob = p.bulkJob.figures(job, hooks, arrived, t0)
		res.Notes = append(res.Notes, res.BulkJob.Problems()...)
		if !job.ended {
			res.Notes = append(res.Notes, fmt.Sprintf("the bulk job had not ended %s after its creation", p.bulkJob.deadline))
		}
	}
	if p.realistic != nil {
		res.Realistic = p.realistic.figures(hooks, in.Receiver().Arrivals(), in.Receiver())
		// Retries are not duplicates: the row's are the arrivals beyond
		// what each hook's path calls for.
		res.Check.Duplicates = res.Realistic.Unexpected
	}
	u1, rss1 := in.Settle(ctx, results, &res)
	for k, v := range rss1 {
		rss[k] = max(rss[k], v)
	}
	if n := in.Receiver().Overflow(); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d arrivals beyond the receiver's capacity were not recorded", n))
	}
	fillTimes(&res)
	res.PeakRSSMiB = mib(rss)
	res.CPUSeconds, res.Database, res.NATS = u1.Sub(u0)
	if res.Crash != nil {
		// The killed process's processor time went with it.
		delete(res.CPUSeconds, res.Crash.Process)
		res.Notes = append(res.Notes, res.Crash.Process+"'s processor time is left out: the killed process's went with it")
	}
	res.PerHook = perHook(res)
	if res.Check.Duplicates > 0 && p.crash == nil {
		res.Notes = append(res.Notes, fmt.Sprintf("%d duplicate deliveries without any fault: leases expired while hooks or their results were queued, and the hooks were re-driven", res.Check.Duplicates))
	}
	res.OK = res.Check.Complete() && res.Check.Early == 0 && (res.Retention == nil || res.Retention.OK) &&
		(res.Realistic == nil || res.Realistic.OK()) && (res.Ordering == nil || res.Ordering.OK()) &&
		(res.BulkJob == nil || res.BulkJob.OK())
	if res.Crash != nil {
		res.Crash.Goals = report.CrashGoals(res)
	}
	return res, nil
}

// scheduler creates hooks as a user would; calibrate needs nothing else.
type scheduler interface {
	Schedule(ctx context.Context, postAts []time.Time, path string) ([]check.Hook, load.Created, error)
}

// expectOnce expects each hook to arrive once.
func expectOnce(hooks []check.Hook) map[uuid.UUID]int {
	out := make(map[uuid.UUID]int, len(hooks))
	for _, h := range hooks {
		out[h.ID] = 1
	}
	return out
}

// calibrate measures the system's create rate on this machine with hooks
// due in a year (they stay in the table, a few thousand far-future rows),
// so that the scenario's postAt leaves just enough time to create its
// hooks.
func calibrate(ctx context.Context, in scheduler, hooks int) (float64, error) {
	n := min(max(hooks/20, 500), 3000)
	at := time.Now().AddDate(1, 0, 0)
	postAts := make([]time.Time, n)
	for i := range postAts {
		postAts[i] = at
	}
	_, created, err := in.Schedule(ctx, postAts, "/calibrate")
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
// deadline; it says whether all arrived.
func waitDelivered(ctx context.Context, r *receiver.Receiver, hooks []check.Hook, deadline time.Time) bool {
	return waitArrivals(ctx, r, expectOnce(hooks), deadline)
}

// waitArrivals waits until each hook of want has arrived at least as many
// times as want says, or the deadline; it says whether all did. It reads
// each arrival once, so that watching costs the machine next to nothing.
func waitArrivals(ctx context.Context, r *receiver.Receiver, want map[uuid.UUID]int, deadline time.Time) bool {
	waiting := maps.Clone(want)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	next := 0
	for {
		var arrived []receiver.Arrival
		arrived, next = r.ArrivalsFrom(next)
		for _, a := range arrived {
			if n, ok := waiting[a.ID]; ok && n <= 1 {
				delete(waiting, a.ID)
			} else if ok {
				waiting[a.ID] = n - 1
			}
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
	res.AllDeliveredSeconds, res.DeliveriesPerSecond, res.SustainedPerSecond = throughput(res.Check)
}

// throughput is the time from the first postAt to the last first arrival,
// the deliveries per second over it, and the rate between the 10th and
// 90th percentile first arrivals.
func throughput(c check.Outcome) (allSeconds, perSecond, sustained float64) {
	if c.Delivered == 0 {
		return 0, 0, 0
	}
	all := c.LastArrival.Sub(c.FirstPostAt)
	allSeconds = math.Round(all.Seconds()*1000) / 1000
	perSecond = stats.PerSecond(c.Delivered, all)
	firsts := c.FirstArrivals()
	slices.SortFunc(firsts, func(a, b time.Time) int { return a.Compare(b) })
	lo, hi := len(firsts)/10, len(firsts)*9/10
	if hi > lo {
		sustained = stats.PerSecond(hi-lo, firsts[hi-1].Sub(firsts[lo]))
	}
	return allSeconds, perSecond, sustained
}

// stages times the stages of the hooks whose first postAt is ref from the
// services' logs, counting only lines from since on (zero: all).
func stages(s *suite.Suite, ref, since time.Time, c check.Outcome) []logscan.Stage {
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
		out = append(out, logscan.Summarize(st.name, events, ref, since))
	}
	// The receiver's view, for comparison with the dispatcher's log.
	return append(out, arrivedStage(c))
}

// arrivedStage times the first arrivals from the first postAt.
func arrivedStage(c check.Outcome) logscan.Stage {
	var arrivals []logscan.Event
	for _, t := range c.FirstArrivals() {
		arrivals = append(arrivals, logscan.Event{At: t, Count: 1})
	}
	slices.SortFunc(arrivals, func(a, b logscan.Event) int { return a.At.Compare(b.At) })
	return logscan.Summarize("arrived", arrivals, c.FirstPostAt, time.Time{})
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

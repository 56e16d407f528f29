// Command measure drives the river baseline alone, to tune it: it builds
// riverbase, starts it against the benchmark's receiver on a fresh
// database, schedules a burst (-jobs due at one instant) or a steady flow
// (-rate per second for -seconds), waits for every arrival and prints one
// JSON line: deliveries/s, lateness, early and missing counts, riverbase's
// CPU and peak RSS, and its settings. Wrap it in `flock /tmp/bench.lock`.
//
//	go run ./tests/bench/cmd/riverbase/measure -scenario burst -jobs 20000 -workers 100
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/tests/bench/internal/baseline"
	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// config is the command line.
type config struct {
	scenario string
	jobs     int
	rate     int
	seconds  int
	workers  int
	backlog  int
	env      string
	dir      string
	adminURL string
	lead     time.Duration
	dbURL    string
}

// result is the printed line.
type result struct {
	Scenario      string            `json:"scenario"`
	Jobs          int               `json:"jobs"`
	Backlog       int               `json:"backlog,omitempty"`
	BacklogLoadS  float64           `json:"backlogLoadS,omitempty"`
	ScheduleS     float64           `json:"scheduleS"`
	Delivered     int               `json:"delivered"`
	Missing       int               `json:"missing"`
	Duplicates    int               `json:"duplicates"`
	Early         int               `json:"early"`
	DeliveriesPS  float64           `json:"deliveriesPerS"`
	Lateness      stats.Summary     `json:"lateness"`
	RiverbaseCPUS float64           `json:"riverbaseCpuS"`
	PeakRSSMiB    float64           `json:"peakRssMiB"`
	Settings      map[string]string `json:"settings"`
}

func main() {
	var c config
	flag.StringVar(&c.scenario, "scenario", "burst", "burst or steady")
	flag.IntVar(&c.jobs, "jobs", 20000, "burst: jobs due at one instant")
	flag.IntVar(&c.rate, "rate", 100, "steady: jobs due per second")
	flag.IntVar(&c.seconds, "seconds", 20, "steady: seconds of jobs")
	flag.IntVar(&c.workers, "workers", 0, "riverbase MaxWorkers (0: its default)")
	flag.IntVar(&c.backlog, "backlog", 0, "far-future jobs loaded before scheduling")
	flag.StringVar(&c.env, "env", "", "more riverbase settings, KEY=VALUE,...")
	flag.DurationVar(&c.lead, "lead", baseline.MinLead, "least time from scheduling to the first instant")
	flag.StringVar(&c.dbURL, "database-url", "", "use (and keep) this database instead of a fresh one")
	flag.StringVar(&c.dir, "dir", ".bench/riverbase", "work folder (logs, binary)")
	flag.Parse()
	c.adminURL = os.Getenv("SUNDIAL_TEST_DATABASE_URL")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

func run(ctx context.Context, c config) (res result, err error) {
	if c.adminURL == "" {
		return res, errors.New("SUNDIAL_TEST_DATABASE_URL is required (run under .bin/withpg)")
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return res, err
	}
	bin, err := baseline.Build(ctx, c.dir)
	if err != nil {
		return res, err
	}
	due := dueTimes(c)
	rec, err := receiver.Start(len(due)+1000, c.dir)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, rec.Close(context.WithoutCancel(ctx))) }()
	b, err := baseline.Start(ctx, baseline.Options{
		DatabaseURL: cmp.Or(c.dbURL, c.adminURL), CreateDatabase: c.dbURL == "", ReceiverURL: rec.Domain(), CAFile: rec.CAFile,
		SigningKey: "measure-key", Dir: c.dir, Workers: c.workers, Env: parseEnv(c.env), Binary: bin,
	})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, b.Close(context.WithoutCancel(ctx))) }()
	res = result{Scenario: c.scenario, Jobs: len(due), Backlog: c.backlog, Settings: b.Settings()}
	if c.backlog > 0 {
		t0 := time.Now()
		if err := b.LoadBacklog(ctx, c.backlog); err != nil {
			return res, err
		}
		res.BacklogLoadS = time.Since(t0).Seconds()
	}
	return deliver(ctx, b, rec, due, c.lead, res)
}

// dueTimes are the jobs' offsets from the first instant.
func dueTimes(c config) []time.Duration {
	if c.scenario == "steady" {
		out := make([]time.Duration, c.rate*c.seconds)
		for i := range out {
			out[i] = time.Duration(i) * time.Second / time.Duration(c.rate)
		}
		return out
	}
	return make([]time.Duration, c.jobs)
}

func deliver(ctx context.Context, b *baseline.Baseline, rec *receiver.Receiver, due []time.Duration, lead time.Duration, res result) (result, error) {
	start := time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
	jobs := make([]baseline.Job, len(due))
	hooks := make([]check.Hook, len(due))
	for i, d := range due {
		id := uuid.New()
		jobs[i] = baseline.Job{ID: id.String(), At: start.Add(d), Path: "/measure"}
		hooks[i] = check.Hook{ID: id, PostAt: jobs[i].At}
	}
	t0 := time.Now()
	if err := b.Schedule(ctx, jobs); err != nil {
		return res, err
	}
	res.ScheduleS = time.Since(t0).Seconds()
	if time.Now().After(start) {
		return res, fmt.Errorf("scheduling took %.1fs, past the first instant", res.ScheduleS)
	}
	cpu0 := b.CPU()
	deadline := jobs[len(jobs)-1].At.Add(2 * time.Minute)
	for rec.Count() < len(jobs) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	arrivals := rec.Arrivals()
	got := make([]check.Arrival, len(arrivals))
	for i, a := range arrivals {
		got[i] = check.Arrival{ID: a.ID, At: rec.At(a)}
	}
	o := check.Compare(hooks, got)
	res.Delivered, res.Missing, res.Duplicates, res.Early = o.Delivered, o.Missing, o.Duplicates, o.Early
	res.Lateness = o.Lateness
	res.DeliveriesPS = stats.PerSecond(o.Delivered, o.LastArrival.Sub(o.FirstPostAt))
	res.RiverbaseCPUS = (b.CPU() - cpu0).Seconds()
	res.PeakRSSMiB = float64(b.PeakRSS()) / (1 << 20)
	return res, ctx.Err()
}

func parseEnv(s string) map[string]string {
	out := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

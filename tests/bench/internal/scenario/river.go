package scenario

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/tests/bench/internal/baseline"
	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/logscan"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// riverBatch is how many jobs one InsertMany stores: what a team would
// batch when scheduling many jobs at once.
const riverBatch = 5000

// river is the baseline: cmd/riverbase, a river client whose job does the
// same signed HTTPS POST, as its own process.
type river struct {
	b        *baseline.Baseline
	recv     *receiver.Receiver
	backlog  *suite.BacklogLoad
	closed   bool
	closeErr error
}

// riverSigningKey signs the baseline's POSTs as Sundial signs its own; a
// realistic receiver checks them.
const riverSigningKey = "bench-baseline-signing-key"

func startBaseline(ctx context.Context, e *Env, p plan, dir string, arrivals int) (_ Instance, err error) {
	in := &river{}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if in.recv, err = receiver.Start(arrivals, dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, in.Close(context.WithoutCancel(ctx)))
		}
	}()
	in.b, err = baseline.Start(ctx, baseline.Options{
		DatabaseURL: e.Cfg.AdminURL, ReceiverURL: "https://" + in.recv.Domain(), CAFile: in.recv.CAFile,
		SigningKey: riverSigningKey, Dir: dir, Workers: e.Cfg.BaselineWorkers, Env: baselineEnv(e.Cfg.BaselineEnv, p.baselineEnv),
		Binary: e.RiverBin, CreateDatabase: true,
	})
	if err != nil {
		return nil, fmt.Errorf("start baseline: %w", err)
	}
	if p.backlog > 0 {
		t := time.Now()
		if err := in.b.LoadBacklog(ctx, p.backlog); err != nil {
			return nil, fmt.Errorf("baseline backlog: %w", err)
		}
		in.backlog = &suite.BacklogLoad{Rows: p.backlog, Seconds: since(t)}
		e.Log.Info("backlog loaded", "scenario", p.name, "system", "baseline", "rows", p.backlog, "seconds", in.backlog.Seconds)
		e.checkpoint(ctx, p.name, "baseline")
	}
	return in, nil
}

// baselineEnv is the configured settings with the plan's on top.
func baselineEnv(configured, planned map[string]string) map[string]string {
	out := maps.Clone(configured)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, planned)
	return out
}

func since(t time.Time) float64 { return float64(time.Since(t).Milliseconds()) / 1000 }

func (in *river) Receiver() *receiver.Receiver { return in.recv }

func (in *river) Schedule(ctx context.Context, postAts []time.Time, path string) ([]check.Hook, load.Created, error) {
	return in.ScheduleSpecs(ctx, load.Specs(postAts, path))
}

func (in *river) SigningKey() string { return riverSigningKey }

// ScheduleSpecs inserts the jobs in batches of riverBatch, one InsertMany
// each.
func (in *river) ScheduleSpecs(ctx context.Context, specs []load.Spec) ([]check.Hook, load.Created, error) {
	hooks := make([]check.Hook, len(specs))
	jobs := make([]baseline.Job, len(specs))
	for i, s := range specs {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, load.Created{}, err
		}
		hooks[i] = check.Hook{ID: id, PostAt: s.PostAt}
		jobs[i] = baseline.Job{ID: id.String(), At: s.PostAt, Path: s.Path, Retries: s.Retries, RetryDelay: s.RetryDelay}
	}
	start := time.Now()
	var latencies []time.Duration
	for lo := 0; lo < len(jobs); lo += riverBatch {
		t := time.Now()
		if err := in.b.Schedule(ctx, jobs[lo:min(lo+riverBatch, len(jobs))]); err != nil {
			return nil, load.Created{}, fmt.Errorf("baseline schedule: %w", err)
		}
		latencies = append(latencies, time.Since(t))
	}
	elapsed := time.Since(start)
	return hooks, load.Created{
		Count: len(hooks), Seconds: elapsed.Seconds(), PerSecond: stats.PerSecond(len(hooks), elapsed),
		Latency: stats.Summarize(latencies), Finished: time.Now(),
	}, nil
}

func (in *river) BeginDelivery(context.Context, time.Time) []string { return nil }

func (in *river) Usage(context.Context) Usage { return Usage{CPU: in.cpu()} }

func (in *river) cpu() map[string]time.Duration {
	out := suite.MachineCPU()
	out["riverbase"] = in.b.CPU()
	return out
}

func (in *river) PeakRSS() map[string]int64 { return map[string]int64{"riverbase": in.b.PeakRSS()} }

// Settle reads the figures and stops the baseline: river completes each
// job in the same process right after its POST, so there is no separate
// bookkeeping to wait for.
func (in *river) Settle(ctx context.Context, _ int, res *report.Result) (Usage, map[string]int64) {
	u, rss := Usage{CPU: in.cpu()}, in.PeakRSS()
	res.Stages = []logscan.Stage{arrivedStage(res.Check)}
	in.closeErr, in.closed = in.b.Close(ctx), true
	return u, rss
}

func (in *river) Backlog() *suite.BacklogLoad { return in.backlog }

func (in *river) Settings() map[string]string { return maps.Clone(in.b.Settings()) }

func (in *river) Close(ctx context.Context) error {
	var errs []error
	if in.b != nil && !in.closed {
		in.closeErr, in.closed = in.b.Close(ctx), true
	}
	errs = append(errs, in.closeErr)
	if in.recv != nil {
		closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		errs = append(errs, in.recv.Close(closeCtx))
		cancel()
	}
	return errors.Join(errs...)
}

package scenario

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// batchSize is the hooks of each request of batch-intake: the most one
// POST /v1/hooks/batch may hold, the "per 1,000-hook request".
const batchSize = 1000

// batchIntake measures POST /v1/hooks/batch: 1,000-hook batches due next
// year in a closed loop from BatchClients clients, then one COPY of as many
// rows as BatchCopyRows into the same database, PostgreSQL's own rate that
// the intake is compared with. The clients are few: each request is 1,000
// hooks of work for the gateway and one statement for PostgreSQL, so a
// handful of requests at once (4 per vCPU by default) keeps both busy
// while one is on the wire, and more only queue in the gateway.
func (e *Env) batchIntake(ctx context.Context) (res report.Result, err error) {
	dir := filepath.Join(e.Cfg.Dir, "batch-intake", "sundial")
	if err := os.RemoveAll(dir); err != nil {
		return res, err
	}
	s, err := sundialSuite(ctx, e, "batch-intake", dir, 1000, 0, nil)
	if err != nil {
		return res, err
	}
	defer func() {
		if closeErr := s.Close(context.WithoutCancel(ctx)); closeErr != nil {
			res.Notes = append(res.Notes, "teardown: "+closeErr.Error())
		}
	}()
	e.Settings["sundial"] = s.Settings
	client := load.NewClient(s.APIBase, s.Project.APIKey, e.Cfg.BatchClients)
	body, err := load.BatchBody(batchSize, time.Now().AddDate(1, 0, 0), "/bench/batch")
	if err != nil {
		return res, err
	}
	// One batch read in full: the answer is what the API promises, and the
	// connection and caches are warm before the clock starts.
	if err := client.CheckBatch(ctx, body, batchSize); err != nil {
		return res, err
	}
	b := &report.Batch{Size: batchSize, Clients: e.Cfg.BatchClients}
	b.Load = append(b.Load, "load average (1, 5, 15 min) before the loop: "+loadAverage())
	created, cpu, profiles, err := e.batchLoop(ctx, s, client, body)
	if err != nil {
		return res, err
	}
	b.Load = append(b.Load, "load average (1, 5, 15 min) after the loop: "+loadAverage())
	res.Create, res.Hooks, res.CPUSeconds, res.Profiles = created, created.Count, cpu, profiles
	res.PeakRSSMiB = mib(s.PeakRSS())
	b.Requests = created.Count / batchSize
	b.RequestsPerSecond = created.PerSecond / batchSize
	b.CPUMicrosPerHook = microsPerHook(cpu, created.Count)
	if b.Copy, err = suite.MeasureCopy(ctx, s.DBURL, s.Project.ProjectID, s.Receiver.Domain(), e.Cfg.BatchCopyRows); err != nil {
		return res, err
	}
	if b.Copy.PerSecond > 0 {
		b.VsCopy = math.Round(created.PerSecond/b.Copy.PerSecond*100) / 100
	}
	res.Batch = b
	for status, n := range created.Errors {
		res.Notes = append(res.Notes, fmt.Sprintf("%d answers %s", n, status))
	}
	res.OK = created.Count > 0 && len(created.Errors) == 0
	return res, nil
}

// batchLoop runs the closed loop, with the gateway's CPU profile in its
// middle when profiling, and returns its figures and the processes' CPU
// time during it.
func (e *Env) batchLoop(ctx context.Context, s *suite.Suite, client *load.Client, body []byte) (load.Created, map[string]float64, []string, error) {
	profiled := e.profile(ctx, s, "batch-intake", min(e.Cfg.PprofSeconds, max(e.Cfg.BatchSeconds-2, 1)), "gateway")
	cpu0 := s.CPU()
	created, err := client.BatchLoop(ctx, e.Cfg.BatchClients, time.Duration(e.Cfg.BatchSeconds)*time.Second, body, batchSize)
	cpu := cpuDelta(cpu0, s.CPU())
	profiles := <-profiled
	return created, cpu, profiles, err
}

// microsPerHook is each process's CPU time per hook, in microseconds.
func microsPerHook(cpu map[string]float64, hooks int) map[string]float64 {
	out := map[string]float64{}
	if hooks == 0 {
		return out
	}
	for k, v := range cpu {
		out[k] = math.Round(v*1e6/float64(hooks)*10) / 10
	}
	return out
}

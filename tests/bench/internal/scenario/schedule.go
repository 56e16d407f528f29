package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
)

// schedule measures the API's intake: POST /v1/hooks in a closed loop,
// hooks due next year so that nothing is delivered while it runs, and the
// gateway's peak memory.
func (e *Env) schedule(ctx context.Context) (res report.Result, err error) {
	dir := filepath.Join(e.Cfg.Dir, "schedule", "sundial")
	if err := os.RemoveAll(dir); err != nil {
		return res, err
	}
	s, err := sundialSuite(ctx, e, "schedule", dir, 1000, 0, nil)
	if err != nil {
		return res, err
	}
	defer func() {
		if closeErr := s.Close(context.WithoutCancel(ctx)); closeErr != nil {
			res.Notes = append(res.Notes, "teardown: "+closeErr.Error())
		}
	}()
	e.Settings["sundial"] = s.Settings
	client := load.NewClient(s.APIBase, s.Project.APIKey, e.Cfg.Clients)
	d := time.Duration(e.Cfg.ScheduleSeconds) * time.Second
	cpu0 := s.CPU()
	// The gateway's CPU profile, taken during the loop.
	profiled := e.profile(ctx, s, "schedule", min(e.Cfg.PprofSeconds, max(e.Cfg.ScheduleSeconds-2, 1)), "gateway")
	created, err := client.Loop(ctx, e.Cfg.Clients, d, time.Now().AddDate(1, 0, 0), "/bench/schedule")
	if err != nil {
		return res, err
	}
	res.Profiles = <-profiled
	res.Create = created
	res.Hooks = created.Count
	res.CPUSeconds = cpuDelta(cpu0, s.CPU())
	res.PeakRSSMiB = mib(s.PeakRSS())
	for status, n := range created.Errors {
		res.Notes = append(res.Notes, fmt.Sprintf("%d answers %s", n, status))
	}
	res.OK = created.Count > 0 && len(created.Errors) == 0
	return res, nil
}

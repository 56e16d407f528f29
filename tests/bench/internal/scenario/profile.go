package scenario

import (
	"context"
	"path/filepath"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// profile starts CPU and mutex profiles of the named services of s over
// the next seconds, under the run's pprof folder with prefix, when
// profiling (BENCH_PPROF=1); the channel gives the files written once they
// are, at once nil when not profiling.
func (e *Env) profile(ctx context.Context, s *suite.Suite, prefix string, seconds int, names ...string) <-chan []string {
	profiled := make(chan []string, 1)
	if !e.Cfg.Pprof {
		profiled <- nil
		return profiled
	}
	go func() {
		files, err := s.Profile(ctx, filepath.Join(e.Cfg.Dir, "pprof"), prefix, time.Duration(seconds)*time.Second, names...)
		if err != nil {
			e.Log.Warn("profile", "err", err)
		}
		profiled <- files
	}()
	return profiled
}

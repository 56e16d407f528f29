// Command bench is Sundial's end-to-end benchmark: it builds the four
// services, runs them as processes on this machine with PostgreSQL and NATS
// JetStream, measures the API's intake, schedules hooks for each delivery
// scenario, and prints one table of lateness, throughput and memory, also
// written as JSON (.bench/e2e.json). With BENCH_SYSTEMS=sundial,baseline
// each delivery scenario also runs on the river baseline, in turn, and the
// report compares them. `make bench` and `make bench-compare` run it;
// BENCH_* variables size it (see internal/scenario.Config).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/baseline"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/scenario"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := suite.Root(wd)
	if err != nil {
		return err
	}
	cfg, err := scenario.ConfigFromEnv(root)
	if err != nil {
		return err
	}
	binDir := filepath.Join(cfg.Dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	log.Info("building the services", "dir", binDir, "pprof", cfg.Pprof)
	bin, err := suite.Build(ctx, root, binDir, cfg.Pprof)
	if err != nil {
		return err
	}
	if scenario.NeedsCLI(cfg.Scenarios) {
		log.Info("building the sundial command", "dir", binDir)
		if bin.Sundial, err = suite.BuildCLI(ctx, root, binDir); err != nil {
			return err
		}
	}
	env := &scenario.Env{Cfg: cfg, Bin: bin, Log: log}
	if slices.Contains(cfg.Systems, "baseline") {
		if env.RiverBin, err = baseline.Build(ctx, binDir); err != nil {
			return err
		}
	}
	rep := report.Report{
		Machine: report.DescribeMachine(),
		Started: time.Now().UTC(),
		Quick:   cfg.Quick,
		Sizes:   cfg.Sizes(),
	}
	rep.Results = env.Run(ctx)
	rep.Settings = env.Settings
	rep.Comparisons = report.Compare(rep.Results)
	rep.Finished = time.Now().UTC()
	rep.PrintTable(os.Stdout)
	for _, system := range slices.Sorted(maps.Keys(rep.Settings)) {
		fmt.Printf("%s settings: %v\n", system, rep.Settings[system])
	}
	if err := rep.Write(cfg.Out); err != nil {
		return err
	}
	fmt.Printf("written to %s\n", cfg.Out)
	for _, r := range rep.Results {
		if !r.OK {
			return fmt.Errorf("scenario %s did not pass: %v", r.Scenario, r.Notes)
		}
	}
	return ctx.Err()
}

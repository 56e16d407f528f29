// Command bench is Sundial's end-to-end benchmark: it builds the four
// services, runs them as processes on this machine with PostgreSQL and NATS
// JetStream, schedules hooks through the API for each scenario, and prints
// one table of lateness, throughput and memory, also written as JSON
// (.bench/e2e.json). `make bench-e2e` runs it; BENCH_* variables size it
// (see internal/scenario.Config).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

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
	rep := report.Report{
		Machine: report.DescribeMachine(),
		Started: time.Now().UTC(),
		Sizes: map[string]int{
			"BENCH_SAME_SECOND_SIZE": cfg.SameSecondSize, "BENCH_STEADY_RATE": cfg.SteadyRate,
			"BENCH_STEADY_SECONDS": cfg.SteadySeconds, "BENCH_BURST_SIZE": cfg.BurstSize,
			"BENCH_BACKLOG_ROWS": cfg.BacklogRows, "BENCH_CLIENTS": cfg.Clients,
		},
	}
	env := &scenario.Env{Cfg: cfg, Bin: bin, Log: log}
	rep.Results = env.Run(ctx)
	rep.Settings = env.Settings
	rep.Finished = time.Now().UTC()
	rep.PrintTable(os.Stdout)
	fmt.Printf("service settings: %v\n", rep.Settings)
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

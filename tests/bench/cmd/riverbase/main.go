// Command riverbase is the benchmark's baseline: hook delivery built the way
// a team would build it without Sundial, on riverqueue/river. It migrates
// river's schema into its database, then works one queue of delivery jobs
// (each a signed HTTPS POST, see internal/baseline/delivery) until SIGTERM.
//
// Every setting is an environment variable, documented in settings.go; the
// ready line ("riverbase ready") lists the values in effect.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/sundial-run/sundial/tests/bench/internal/baseline/delivery"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	if err := run(log); err != nil {
		log.Error("riverbase failed", "error", err.Error())
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	cfg, err := loadSettings(os.Getenv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		return err
	}
	worker, err := newWorker(cfg, log)
	if err != nil {
		return err
	}
	warmup := newWarmupWorker()
	client, err := newClient(pool, cfg, worker, warmup)
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("start river: %w", err)
	}
	if err := warmUp(ctx, client, warmup); err != nil {
		return errors.Join(err, shutdown(client, cfg.StopTimeout, worker, log))
	}
	log.Info("riverbase ready", "settings", cfg.public())
	<-ctx.Done()
	return shutdown(client, cfg.StopTimeout, worker, log)
}

func openPool(ctx context.Context, cfg settings) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	pc.MaxConns = int32(cfg.DBMaxConns)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("database pool: %w", err)
	}
	return pool, nil
}

// migrate brings river's tables to the latest version, as a team's program
// would at start.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	return nil
}

func newWorker(cfg settings, log *slog.Logger) (*delivery.Worker, error) {
	httpClient, err := delivery.NewHTTPClient(cfg.CAFile, cfg.HTTPTimeout, cfg.MaxWorkers)
	if err != nil {
		return nil, err
	}
	return &delivery.Worker{
		HTTP: httpClient, BaseURL: cfg.ReceiverURL, SigningKey: cfg.SigningKey,
		UserAgent: "riverbase/1", LogEvery: int64(cfg.LogEvery), Log: log,
	}, nil
}

func newClient(pool *pgxpool.Pool, cfg settings, worker *delivery.Worker, warmup *warmupWorker) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, worker)
	river.AddWorker(workers, warmup)
	riverLog := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.RiverLogLevel}))
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues: map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: cfg.MaxWorkers},
		},
		Workers:                     workers,
		FetchCooldown:               cfg.FetchCooldown,
		FetchPollInterval:           cfg.FetchPollInterval,
		PollOnly:                    cfg.PollOnly,
		JobTimeout:                  cfg.JobTimeout,
		RescueStuckJobsAfter:        cfg.RescueAfter,
		CompletedJobRetentionPeriod: cfg.CompletedRetention,
		Logger:                      riverLog,
	})
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return client, nil
}

// shutdown lets running deliveries finish for up to timeout, then cancels
// them (river hands them back as retryable).
func shutdown(client *river.Client[pgx.Tx], timeout time.Duration, worker *delivery.Worker, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := client.Stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		hardCtx, hardCancel := context.WithTimeout(context.Background(), timeout)
		defer hardCancel()
		err = client.StopAndCancel(hardCtx)
	}
	log.Info("riverbase stopped", "delivered", worker.Delivered())
	if err != nil {
		return fmt.Errorf("stop river: %w", err)
	}
	return nil
}

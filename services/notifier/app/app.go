// Package app is the notifier service: it consumes the alerts that the
// scheduler and the gateway publish on NATS and tells people about them.
// cmd/notifier runs it as a process; end-to-end tests boot it in-process.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/notifier/internal/alert"
)

// startupTimeout bounds each step of New, so that a NATS server that is not
// there yet fails the start instead of hanging it.
const startupTimeout = 30 * time.Second

// App is a connected notifier, ready to Run.
type App struct {
	cfg Config
	log *slog.Logger
	// pool is unused until the notification channels, which are stored per
	// project, arrive; connecting now makes a bad database fail the start.
	pool    *pgxpool.Pool
	nc      *nats.Conn
	js      jetstream.JetStream
	handler *alert.Handler
}

// New connects to PostgreSQL and NATS and makes sure the streams exist. It
// starts nothing that outlives it: on error everything it opened is closed.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("notifier config: %w", err)
	}
	pool, err := postgres.Connect(ctx, cfg.DatabaseURL, int32(cfg.DatabaseMaxConns))
	if err != nil {
		return nil, err
	}
	nc, js, err := bus.Connect(cfg.NATSURL, "sundial-notifier")
	if err != nil {
		pool.Close()
		return nil, err
	}
	ensureCtx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := event.EnsureStreams(ensureCtx, js); err != nil {
		nc.Close()
		pool.Close()
		return nil, err
	}
	return &App{
		cfg:     cfg,
		log:     log,
		pool:    pool,
		nc:      nc,
		js:      js,
		handler: alert.NewHandler(alert.LogSender{Log: log}, log),
	}, nil
}

// Run consumes alerts until ctx is done, then lets the alerts being sent
// finish (or hands them back after ShutdownTimeout), closes the connections
// New opened and returns.
func (a *App) Run(ctx context.Context) error {
	a.log.Info("notifier running", "concurrency", a.cfg.Concurrency, "shutdown_timeout", a.cfg.ShutdownTimeout.String())
	err := bus.Consume(ctx, a.js, event.NotifierConsumer(), a.handler.Handle, bus.ConsumeOptions{
		Concurrency:  a.cfg.Concurrency,
		DrainTimeout: a.cfg.ShutdownTimeout,
		Logger:       a.log,
	})
	err = errors.Join(err, a.close())
	a.log.Info("notifier stopped", "err", err)
	return err
}

// close flushes the acknowledgements of the last alerts before closing, so
// that a clean stop does not make the next notifier send them again.
func (a *App) close() error {
	var err error
	if a.nc.IsConnected() {
		if ferr := a.nc.FlushTimeout(5 * time.Second); ferr != nil {
			err = fmt.Errorf("flush nats: %w", ferr)
		}
	}
	a.nc.Close()
	a.pool.Close()
	return err
}

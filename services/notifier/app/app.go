// Package app is the notifier service: it takes in the alerts that the
// scheduler and the gateway produce, groups them, and sends each group to
// the channels of its project, retrying a failing channel and recording
// every try (docs/notifications.md). cmd/notifier runs it as a process;
// end-to-end tests boot it in-process. Any number of notifiers can share a
// database and NATS: PostgreSQL row locks divide the work.
package app

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sundial-run/sundial/pkg/adminhttp"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/notifier/internal/alert"
	"github.com/sundial-run/sundial/services/notifier/internal/channel"
	"github.com/sundial-run/sundial/services/notifier/internal/closer"
	"github.com/sundial-run/sundial/services/notifier/internal/intake"
	"github.com/sundial-run/sundial/services/notifier/internal/send"
)

// Version is the notifier's version, in the User-Agent of its HTTP sends:
// VERSION at the repository's root, stamped by make build (-ldflags -X);
// "dev" in a build without it.
var Version = "dev"

// startupTimeout bounds each step of New, so that a NATS server that is not
// there yet fails the start instead of hanging it.
const startupTimeout = 30 * time.Second

// Per-tick bounds: a tick does at most batchSize*maxBatches of its work,
// then lets the next tick (or a wake-up) continue.
const (
	batchSize  = 100
	maxBatches = 10
)

// App is a connected notifier, ready to Run.
type App struct {
	cfg     Config
	log     *slog.Logger
	pool    *pgxpool.Pool
	nc      *nats.Conn
	js      jetstream.JetStream
	channel *channel.Sender
	intake  *intake.Intake
	batcher *intake.Batcher
	closer  *closer.Closer
	sender  *send.Worker
	handler *alert.Handler
	admin   *adminhttp.Server
	// groupsDue wakes the closer when a group due now was stored;
	// sendsDue wakes the sender when sends were created.
	groupsDue, sendsDue chan struct{}
}

// New connects to PostgreSQL and NATS and makes sure the streams exist. It
// starts nothing that outlives it: on error everything it opened is closed.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	return NewWith(ctx, cfg, log)
}

// NewWith is New with options (telemetry.WithMetrics); New keeps the plain
// signature that deploy/local's suite takes as a function value.
func NewWith(ctx context.Context, cfg Config, log *slog.Logger, opts ...telemetry.Option) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("notifier config: %w", err)
	}
	keys, err := secretbox.Parse(cfg.SecretKeys)
	if err != nil {
		return nil, fmt.Errorf("notifier config: %w", err)
	}
	roots, err := egress.LoadRoots(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	pool, err := postgres.Connect(ctx, cfg.DatabaseURL, int32(cfg.DatabaseMaxConns))
	if err != nil {
		return nil, err
	}
	if err := postgres.AwaitSchema(ctx, pool, cfg.SchemaWait, log); err != nil {
		pool.Close()
		return nil, err
	}
	if err := checkKeys(ctx, pool, keys); err != nil {
		pool.Close()
		return nil, err
	}
	nc, js, err := bus.Connect(cfg.NATSURL, "sundial-notifier")
	if err != nil {
		pool.Close()
		return nil, err
	}
	ensureCtx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := event.EnsureStreams(ensureCtx, js, cfg.StreamReplicas); err != nil {
		nc.Close()
		pool.Close()
		return nil, err
	}
	// Sizes agree end to end: refuse a server too small for Sundial.
	if _, err := bus.CheckMaxPayload(nc); err != nil {
		nc.Close()
		pool.Close()
		return nil, err
	}
	a := &App{cfg: cfg, log: log, pool: pool, nc: nc, js: js,
		groupsDue: make(chan struct{}, 1), sendsDue: make(chan struct{}, 1)}
	a.wire(roots, keys)
	if err := a.listenAdmin(ctx, telemetry.Resolve(opts...)); err != nil {
		nc.Close()
		pool.Close()
		return nil, err
	}
	return a, nil
}

// listenAdmin binds the admin listener: ready when the database answers
// with the schema this build needs, NATS is connected and the alerts
// consumer exists; metrics with that consumer's lag, the database pool's
// and the NATS connection's.
func (a *App) listenAdmin(ctx context.Context, tel telemetry.Providers) error {
	if err := postgres.ObservePool(tel.Meter.Meter(postgres.MeterName), a.pool); err != nil {
		return err
	}
	var err error
	a.admin, err = bus.ConsumerAdmin(ctx, a.cfg.AdminAddr, "SUNDIAL_NOTIFIER_ADMIN_ADDR", tel, postgres.Ready(a.pool), a.nc, a.js,
		event.NotifierConsumer(a.cfg.StreamReplicas), a.log)
	return err
}

// AdminAddr is the address the admin listener is bound to.
func (a *App) AdminAddr() string {
	return a.admin.Addr()
}

// wire builds the parts of the notifier on the open connections.
func (a *App) wire(roots *x509.CertPool, keys *secretbox.Keyring) {
	cfg := a.cfg
	a.channel = channel.New(channel.Options{
		Guard:        egress.NewGuard(cfg.AllowPrivate, cfg.AllowCIDRs),
		RootCAs:      roots,
		Timeout:      cfg.SendTimeout,
		UserAgent:    egress.UserAgent(Version),
		HeaderPrefix: cfg.HeaderPrefix,
		OwnerSMTP:    cfg.SMTP.ownerSMTP(),
	})
	a.intake = intake.New(a.pool, a.log, intake.Options{
		Owners:    cfg.SMTP.Host != "",
		GroupsDue: func() { poke(a.groupsDue) },
		SendsDue:  func() { poke(a.sendsDue) },
	})
	a.closer = closer.New(a.pool, a.log, cfg.SMTP.Host != "", func() { poke(a.sendsDue) })
	a.sender = send.New(send.Config{
		Pool:     a.pool,
		Log:      a.log,
		Channel:  a.channel,
		Lease:    cfg.SendLease,
		Timeout:  cfg.SendTimeout + time.Second, // the channel's own bound says it first
		RetryMin: cfg.RetryMin, RetryMax: cfg.RetryMax, GiveUp: cfg.GiveUp,
		DashboardURL:    cfg.DashboardURL,
		Keys:            keys,
		Concurrency:     cfg.Concurrency,
		ShutdownTimeout: cfg.ShutdownTimeout,
	})
	a.batcher = intake.NewBatcher(a.intake)
	a.handler = alert.NewHandler(a.batcher, a.log)
}

// Run takes alerts in, closes due groups and tries due sends until ctx is
// done; then it stops claiming, lets the sends in flight finish within
// ShutdownTimeout (recording them), closes the connections New opened and
// returns. A send still running after that is retried by any notifier
// when its lease expires.
func (a *App) Run(ctx context.Context) error {
	a.logStart()
	var wg sync.WaitGroup
	var consumeErr error
	wg.Go(func() { a.admin.Run(ctx) })
	wg.Go(func() { a.batcher.Run(ctx) })
	wg.Go(func() {
		consumeErr = bus.Consume(ctx, a.js, event.NotifierConsumer(a.cfg.StreamReplicas), a.handler.Handle, bus.ConsumeOptions{
			Concurrency:  a.cfg.Concurrency,
			DrainTimeout: a.cfg.ShutdownTimeout,
			Logger:       a.log,
		})
	})
	wg.Go(func() { a.every(ctx, "sweep", nil, a.sweep) })
	wg.Go(func() { a.every(ctx, "close groups", a.groupsDue, a.closeDue) })
	wg.Go(func() { a.sender.Run(ctx, a.cfg.PollInterval, a.sendsDue) })
	wg.Wait()
	err := errors.Join(consumeErr, a.close())
	a.log.Info("notifier stopped", "err", err)
	return err
}

// logStart lists the settings, never a secret (the SMTP password).
func (a *App) logStart() {
	c := a.cfg
	a.log.Info("notifier running", "version", Version, "concurrency", c.Concurrency,
		"poll_interval", c.PollInterval.String(), "sweep_age", c.SweepAge.String(),
		"send_lease", c.SendLease.String(), "send_timeout", c.SendTimeout.String(),
		"retry_min", c.RetryMin.String(), "retry_max", c.RetryMax.String(), "give_up", c.GiveUp.String(),
		"dashboard_url", c.DashboardURL, "allow_private", c.AllowPrivate, "allow_cidrs", len(c.AllowCIDRs),
		"ca_file", c.CAFile != "", "owner_smtp_host", c.SMTP.Host, "owner_smtp_port", c.SMTP.Port,
		"owner_smtp_tls", c.SMTP.TLS, "shutdown_timeout", c.ShutdownTimeout.String())
}

// every runs tick every poll interval, and when wake fires, until ctx is
// done. A tick is bounded by the tick function itself.
func (a *App) every(ctx context.Context, name string, wake <-chan struct{}, tick func(context.Context) error) {
	t := time.NewTicker(a.cfg.PollInterval)
	defer t.Stop()
	for {
		if err := tick(ctx); err != nil && ctx.Err() == nil {
			a.log.WarnContext(ctx, name, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
	}
}

// sweep takes in the alerts whose event never came.
func (a *App) sweep(ctx context.Context) error {
	_, err := a.intake.Sweep(ctx, a.cfg.SweepAge, batchSize, maxBatches)
	return err
}

// closeDue closes due groups, a bounded number of batches per tick.
func (a *App) closeDue(ctx context.Context) error {
	for range maxBatches {
		n, err := a.closer.CloseDue(ctx, batchSize)
		if err != nil || n < batchSize {
			return err
		}
	}
	return nil
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// close flushes the acknowledgements of the last alerts before closing, so
// that a clean stop does not make the next notifier take them in again.
func (a *App) close() error {
	var err error
	if a.nc.IsConnected() {
		if ferr := a.nc.FlushTimeout(5 * time.Second); ferr != nil {
			err = fmt.Errorf("flush nats: %w", ferr)
		}
	}
	a.nc.Close()
	a.channel.Close()
	a.pool.Close()
	return err
}

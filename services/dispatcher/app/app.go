// Package app is the dispatcher service: it takes due hooks from JetStream,
// delivers each over HTTPS, signed, and reports every attempt's result to
// the scheduler. Replicas share one durable consumer and keep no state, so
// any number of them can run. cmd/dispatcher runs it; end-to-end tests boot
// it in-process.
package app

import (
	"context"
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
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
	"github.com/sundial-run/sundial/services/dispatcher/internal/lease"
	"github.com/sundial-run/sundial/services/dispatcher/internal/listener"
	"github.com/sundial-run/sundial/services/dispatcher/internal/report"
)

// Version is the dispatcher's version, sent in the User-Agent of every
// delivery: VERSION at the repository's root, stamped by make build
// (-ldflags -X); "dev" in a build without it.
var Version = "dev"

// name is the service name in the NATS connection's name.
const name = "dispatcher"

// maxCachedProjects bounds the credential cache; a project beyond it is
// simply loaded again.
const maxCachedProjects = 10000

// startupTimeout bounds the wait for NATS to take the stream set-up: NATS
// connections retry for ever, so without it a wrong URL would hang New.
const startupTimeout = 15 * time.Second

// App is a running dispatcher's resources.
type App struct {
	cfg     Config
	log     *slog.Logger
	pool    *pgxpool.Pool
	nc      *nats.Conn
	js      jetstream.JetStream
	client  *delivery.Client
	handler *dispatch.Handler
	// results publishes the attempt results in batches.
	results *report.Batcher
	admin   *adminhttp.Server
}

// New checks cfg, connects to PostgreSQL and NATS and makes sure the
// streams exist. It starts nothing that outlives it; on error it has
// closed whatever it opened.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	return NewWith(ctx, cfg, log)
}

// NewWith is New with options (telemetry.WithProviders); New keeps the plain
// signature that deploy/local's suite takes as a function value.
func NewWith(ctx context.Context, cfg Config, log *slog.Logger, opts ...telemetry.Option) (*App, error) {
	tel := telemetry.Resolve(opts...)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keys, err := secretbox.Parse(cfg.SecretKeys)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	client, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	pool, err := postgres.Connect(ctx, cfg.DatabaseURL, int32(cfg.DatabaseMaxConns))
	if err != nil {
		client.Close()
		return nil, err
	}
	if err := postgres.AwaitSchema(ctx, pool, cfg.SchemaWait, log); err != nil {
		client.Close()
		pool.Close()
		return nil, err
	}
	if err := checkKeys(ctx, pool, keys); err != nil {
		client.Close()
		pool.Close()
		return nil, err
	}
	nc, js, err := connectNATS(ctx, cfg.NATSURL, cfg.StreamReplicas)
	if err != nil {
		client.Close()
		pool.Close()
		return nil, err
	}
	a := &App{cfg: cfg, log: log, pool: pool, nc: nc, js: js, client: client}
	sender := bus.Retrying{
		Publisher:     bus.NewPublisher(js),
		Retry:         report.DefaultRetry,
		EnsureStreams: func(ctx context.Context) error { return event.EnsureStreams(ctx, js, cfg.StreamReplicas) },
		Log:           log,
	}
	a.results, err = report.NewBatcher(report.BatchConfig{MaxBatch: ResultBatch, Linger: cfg.ResultLinger}, sender)
	if err != nil {
		a.close()
		return nil, err
	}
	a.handler = dispatch.NewHandler(dispatch.Config{
		Credentials:     credential.NewCache(credential.NewStore(pool, keys), cfg.KeyCacheTTL, maxCachedProjects),
		Leases:          lease.NewStore(pool),
		Sender:          client,
		Results:         a.results,
		HandBack:        sender,
		Log:             log,
		Metrics:         dispatch.NewMetrics(tel.Meter.Meter(dispatch.MeterName)),
		Hosts:           hostlimit.New(hostlimit.Config{Ceiling: cfg.HostConcurrency}),
		Concurrency:     cfg.Concurrency,
		DeliveryTimeout: cfg.DeliveryTimeout,
		// A listener's hooks go as NATS requests on the same connection.
		Listener:        listener.New(nc, dispatch.DefaultListenerTimeout),
		ListenerTimeout: dispatch.DefaultListenerTimeout,
		TracerProvider:  tel.Tracer,
		// Without a trace exporter, the delivery's spans record nothing.
		UnsampledRecordsNothing: tel.UnsampledRecordsNothing,
	})
	if err := a.listenAdmin(ctx, tel); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// listenAdmin binds the admin listener: ready when the database answers
// with the schema this build needs, NATS is connected and the due hooks'
// consumer exists; metrics with that consumer's lag, the database pool's
// and the NATS connection's.
func (a *App) listenAdmin(ctx context.Context, tel telemetry.Providers) error {
	if err := postgres.ObservePool(tel.Meter.Meter(postgres.MeterName), a.pool); err != nil {
		return err
	}
	var err error
	a.admin, err = bus.ConsumerAdmin(ctx, a.cfg.AdminAddr, "SUNDIAL_DISPATCHER_ADMIN_ADDR", tel, postgres.Ready(a.pool), a.nc, a.js,
		event.DispatcherConsumer(a.cfg.StreamReplicas), a.log)
	return err
}

// AdminAddr is the address the admin listener is bound to.
func (a *App) AdminAddr() string {
	return a.admin.Addr()
}

func newClient(cfg Config) (*delivery.Client, error) {
	roots, err := egress.LoadRoots(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	return delivery.NewClient(delivery.Options{
		Timeout:      cfg.DeliveryTimeout,
		ExcerptBytes: cfg.ResponseExcerptBytes,
		HeaderPrefix: cfg.HeaderPrefix,
		UserAgent:    egress.UserAgent(Version),
		PublicURL:    cfg.PublicURL,
		RootCAs:      roots,
		Guard:        egress.NewGuard(cfg.AllowPrivate, cfg.AllowCIDRs),
		// The per-host ceiling: as many connections kept alive and opened
		// at once per host as deliveries may be in flight to it.
		HostConcurrency: cfg.HostConcurrency,
		ConnectRate:     cfg.HostConnectRate,
	})
}

func connectNATS(ctx context.Context, url string, replicas int) (*nats.Conn, jetstream.JetStream, error) {
	nc, js, err := bus.Connect(url, "sundial-"+name)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := event.EnsureStreams(ctx, js, replicas); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("nats %s: %w", url, err)
	}
	// Sizes agree end to end: refuse a server too small for Sundial.
	if _, err := bus.CheckMaxPayload(nc); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// MaxInFlight is the most deliveries a dispatcher of concurrency has in
// flight at once: its slots, and its slow room for the deliveries that have
// waited on their receivers.
func MaxInFlight(concurrency int) int { return concurrency + dispatch.SlowRoom(concurrency) }

// Run delivers due hooks until ctx is done, then stops taking new ones,
// lets in-flight deliveries finish within ShutdownTimeout (or hands their
// messages back), closes what New opened and returns.
func (a *App) Run(ctx context.Context) error {
	defer a.close()
	a.log.Info("dispatcher running", "version", Version, "concurrency", a.cfg.Concurrency,
		"max_in_flight", MaxInFlight(a.cfg.Concurrency),
		"host_concurrency", a.cfg.HostConcurrency,
		"delivery_timeout", a.cfg.DeliveryTimeout.String(), "allow_private", a.cfg.AllowPrivate,
		"public_url", a.cfg.PublicURL, "result_batch", ResultBatch, "result_linger", a.cfg.ResultLinger.String())
	// The result batcher outlives ctx until the deliveries have drained:
	// their results go out in its last batch.
	var batching sync.WaitGroup
	batching.Go(func() { a.admin.Run(ctx) })
	batchCtx, stopBatches := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBatches()
	batching.Go(func() { a.results.Run(batchCtx) })
	err := bus.Consume(ctx, a.js, event.DispatcherConsumer(a.cfg.StreamReplicas), a.handler.Handle, bus.ConsumeOptions{
		Concurrency:  a.cfg.Concurrency,
		Released:     dispatch.SlowRoom(a.cfg.Concurrency),
		DrainTimeout: a.cfg.ShutdownTimeout,
		Logger:       a.log,
	})
	a.handler.Close()
	stopBatches()
	batching.Wait()
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("consume due hooks: %w", err)
	}
	a.log.Info("dispatcher stopped")
	return nil
}

func (a *App) close() {
	if a.admin != nil {
		_ = a.admin.Close()
	}
	a.nc.Close()
	a.pool.Close()
	a.client.Close()
}

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sundial-run/sundial/pkg/adminhttp"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/api"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/asyncanswer"
	"github.com/sundial-run/sundial/services/gateway/internal/attempt"
	"github.com/sundial-run/sundial/services/gateway/internal/auththrottle"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/bulkjob"
	"github.com/sundial-run/sundial/services/gateway/internal/channel"
	"github.com/sundial-run/sundial/services/gateway/internal/connlimit"
	"github.com/sundial-run/sundial/services/gateway/internal/dashboard"
	"github.com/sundial-run/sundial/services/gateway/internal/endpoint"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/hooklist"
	"github.com/sundial-run/sundial/services/gateway/internal/idempotency"
	"github.com/sundial-run/sundial/services/gateway/internal/keycache"
	"github.com/sundial-run/sundial/services/gateway/internal/listen"
	"github.com/sundial-run/sundial/services/gateway/internal/orderingkey"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/ratelimit"
	"github.com/sundial-run/sundial/services/gateway/internal/sequence"
	"github.com/sundial-run/sundial/services/gateway/internal/signingkey"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Timeouts of the HTTP server. They bound what a slow or stalled client
// can hold: a connection, a goroutine, a body buffer. The idle timeout of
// keep-alive connections is configured (Config.IdleTimeout).
// Version is the gateway's version: VERSION at the repository's root,
// stamped by make build (-ldflags -X); "dev" in a build without it.
var Version = "dev"

const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
)

// streamsTimeout bounds the creation of the NATS streams at start-up.
// alertDrainTimeout bounds the publishing of queued quota alerts at
// shutdown, after the HTTP server has stopped (it matters only when NATS
// is unreachable then).
const (
	streamsTimeout    = 10 * time.Second
	alertDrainTimeout = 5 * time.Second
)

// App is the gateway: an HTTP server in front of PostgreSQL, publishing
// quota and send-test alerts to NATS.
type App struct {
	cfg      Config
	log      *slog.Logger
	pool     *pgxpool.Pool
	nc       *nats.Conn
	alerts   *quota.Alerts
	batcher  *hook.Batcher // nil when creates are not batched
	sweeper  *idempotency.Sweeper
	listener *connlimit.Limiter
	server   *http.Server
	keys     *secretbox.Keyring
	hub      *listen.Hub
	sessions *account.Sweeper
	admin    *adminhttp.Server
	// bulkJobs works on the bulk jobs of every project, one at a time,
	// sharing them with the other gateways' runners.
	bulkJobs *bulkjob.Runner
}

// New connects to the database and NATS (creating the streams) and binds
// the listener, so that a bad configuration fails here; it starts no
// goroutine of its own.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	return NewWith(ctx, cfg, log)
}

// NewWith is New with options (telemetry.WithMetrics); New keeps the plain
// signature that deploy/local's suite takes as a function value.
func NewWith(ctx context.Context, cfg Config, log *slog.Logger, opts ...telemetry.Option) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := calendar.UseSetting(cfg.TZDataFile, cfg.TZDataVersion); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	keys, err := secretbox.Parse(cfg.SecretKeys)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	tel := telemetry.Resolve(opts...)
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
	nc, js, alerts, err := connectAlerts(ctx, cfg.NATSURL, cfg.StreamReplicas, log)
	if err != nil {
		pool.Close()
		return nil, err
	}
	maxData, err := dataLimit(cfg, nc, log)
	if err != nil {
		nc.Close()
		pool.Close()
		return nil, err
	}
	var lc net.ListenConfig
	listener, err := lc.Listen(ctx, "tcp", cfg.HTTPAddr)
	if err != nil {
		nc.Close()
		pool.Close()
		return nil, fmt.Errorf("listen on %s: %w (SUNDIAL_HTTP_ADDR moves it)", cfg.HTTPAddr, err)
	}
	queries := store.New(pool)
	hooks, batcher, err := hookService(cfg, pool, alerts, log)
	if err != nil {
		_ = listener.Close()
		nc.Close()
		pool.Close()
		return nil, err
	}
	maxConns, fileLimit := connlimit.Cap(cfg.MaxConnections)
	if maxConns < cfg.MaxConnections {
		log.Warn("connections capped below SUNDIAL_GATEWAY_MAX_CONNECTIONS to fit the open file limit",
			"max_connections", maxConns, "configured", cfg.MaxConnections, "rlimit_nofile", fileLimit)
	}
	limited := connlimit.New(listener, maxConns)
	// Sockets are counted among the connections: at most half of them.
	sockets := max(1, min(cfg.ListenerMaxSockets, maxConns/2))
	tickets := listen.NewTickets(queries, cfg.PublicURL)
	hub, err := listen.NewHub(listen.Config{
		ResumeWindow: cfg.ListenerResumeWindow, HeaderPrefix: cfg.HeaderPrefix,
		PublicURL: cfg.PublicURL, Intervals: cfg.ListenerIntervals,
		MaxSockets: sockets, MaxProjectSockets: min(cfg.ListenerMaxProjectSockets, sockets),
	}, queries, nc, log)
	if err != nil {
		_ = listener.Close()
		nc.Close()
		pool.Close()
		return nil, err
	}
	proxies, _ := cfg.trustedProxies() // Validate checked them
	bulkActions := bulk.NewService(pool, alerts)
	// One cache, one key service per kind: the API and the dashboard
	// change keys and settings through the same services.
	keyCache := keycache.New(cfg.KeyCacheTTL, keycache.DefaultMax)
	apiKeys, signingKeys := apikey.NewService(pool), signingkey.NewService(pool, keys)
	settings := project.NewService(pool, keys)
	// Send tests store their alert, then publish it like quota alerts.
	channels := channel.NewService(pool, bus.NewPublisher(js), keys)
	// Deleting a sequence cancels its hooks as bulk cancel does.
	sequences := sequence.NewService(pool, bulkActions)
	orderingKeys := orderingkey.NewService(pool)
	bulkJobs := bulkjob.NewService(pool)
	handler := api.New(api.Deps{
		Config: api.Config{HeaderPrefix: cfg.HeaderPrefix, MaxDataBytes: maxData, TrustedProxies: proxies,
			BodyBytesInFlight: int64(cfg.BodyBytesInFlight)},
		Log:          log,
		Keys:         apikey.NewVerifier(queries),
		KeyCache:     keyCache,
		AuthThrottle: authThrottle(cfg.AuthFailuresPerMinute),
		Hooks:        hooks,
		Attempts:     attempt.NewLister(pool),
		Limits:       api.LimitsDeps{Reader: quota.NewReader(queries), Rate: ratelimit.New(ratelimit.Options{})},
		// Replays claim quota threshold alerts, published like those of
		// single creates.
		Bulk:         api.BulkDeps{Bulk: bulkActions},
		Sequences:    api.SequenceDeps{Sequences: sequences},
		OrderingKeys: api.OrderingKeyDeps{OrderingKeys: orderingKeys},
		BulkJobs:     api.BulkJobDeps{BulkJobs: bulkJobs},
		Project:      api.ProjectDeps{Settings: settings},
		KeyMgmt:      api.KeyDeps{APIKeys: apiKeys, SigningKeys: signingKeys},
		List:         api.ListDeps{Hooks: hooklist.NewLister(pool)},
		Endpoints:    api.EndpointDeps{Endpoints: endpoint.NewService(pool)},
		Async:        api.AsyncDeps{Answers: asyncanswer.NewService(pool, keys)},
		Channels:     api.ChannelDeps{Channels: channels},
		Listener:     api.ListenerDeps{Tickets: tickets, Socket: hub.Handler(tickets)},
		Metering:     tel.Meter,
	})
	accounts := account.NewService(queries, cfg.Dashboard)
	dash := dashboard.New(dashboard.Deps{
		Config: dashboard.Config{
			SecureCookie: strings.HasPrefix(cfg.PublicURL, "https:"), TrustedProxies: proxies,
			MaxDataBytes: maxData,
		},
		Log: log, Accounts: accounts, Usage: queries,
		// Hooks are created through the API's service: its quota alerts,
		// its batching.
		Figures: queries, Hooks: hooklist.NewLister(pool), Hook: hook.NewService(pool), Creator: hooks,
		Attempts: attempt.NewLister(pool), Bulk: bulkActions, OrderingKeys: orderingKeys, BulkJobs: bulkJobs,
		Admin: dashboard.AdminDeps{
			APIKeys: apiKeys, SigningKeys: signingKeys, KeyCache: keyCache, Project: settings, Presence: queries,
			Channels: channels, Sequences: sequences,
		},
	})
	server := &http.Server{
		Handler:           withDashboard(handler, dash),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ConnState:         limited.Track,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Ready whatever PostgreSQL and NATS do (the API's readyz says why).
	admin, err := listenAdmin(ctx, cfg.AdminAddr, tel, pool, nc, log)
	if err != nil {
		_ = listener.Close()
		nc.Close()
		pool.Close()
		return nil, err
	}
	return &App{
		cfg: cfg, log: log, pool: pool, nc: nc, alerts: alerts, batcher: batcher,
		sweeper:  idempotency.NewSweeper(queries, log, idempotency.TTL),
		listener: limited, server: server, keys: keys, hub: hub,
		sessions: account.NewSweeper(accounts, log),
		admin:    admin,
		// A replay job claims quota threshold alerts, published like those
		// of single creates.
		bulkJobs: bulkjob.NewRunner(pool, alerts, bulkjob.RunnerConfig{}, log),
	}, nil
}

// listenAdmin binds the admin listener: always ready (the API answers for
// its dependencies itself); metrics with the database pool's and the NATS
// connection's.
func listenAdmin(ctx context.Context, addr string, tel telemetry.Providers, pool *pgxpool.Pool, nc *nats.Conn,
	log *slog.Logger,
) (*adminhttp.Server, error) {
	if err := postgres.ObservePool(tel.Meter.Meter(postgres.MeterName), pool); err != nil {
		return nil, err
	}
	if err := bus.ObserveConn(tel.Meter.Meter(bus.MeterName), nc); err != nil {
		return nil, err
	}
	return adminhttp.New(ctx, addr, "SUNDIAL_GATEWAY_ADMIN_ADDR", tel.Metrics, nil, log)
}

// withDashboard routes /dashboard and what is under it to the dashboard
// (not part of the OpenAPI document), everything else to the API.
// A prefix test rather than a ServeMux: the API's requests reach it
// untouched (a mux would clean or redirect their paths).
func withDashboard(api, dash http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == dashboard.Prefix || strings.HasPrefix(r.URL.Path, dashboard.Prefix+"/") {
			dash.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// authThrottle is the throttle of failed authentications, or none when
// perMinute is 0.
func authThrottle(perMinute int) *auththrottle.Throttle {
	if perMinute == 0 {
		return nil
	}
	return auththrottle.New(auththrottle.Options{Failures: perMinute})
}

// batchTimeout bounds a batch of creates' transaction.
const batchTimeout = 30 * time.Second

// hookService is what POST /v1/hooks and the other hook operations use:
// with CreateBatch, a Batcher (App.Run runs it), else the Service alone.
func hookService(cfg Config, pool *pgxpool.Pool, alerts *quota.Alerts, log *slog.Logger) (api.Hooks, *hook.Batcher, error) {
	s := hook.NewService(pool, hook.WithAnnouncer(alerts))
	if cfg.CreateBatch == 0 {
		return s, nil, nil
	}
	b, err := hook.NewBatcher(s, hook.BatchConfig{
		MaxBatch: cfg.CreateBatch, Linger: cfg.CreateLinger, InFlight: cfg.CreateInFlight, Timeout: batchTimeout,
	}, log)
	if err != nil {
		return nil, nil, err
	}
	return b, b, nil
}

// connectAlerts connects to NATS, makes sure the streams exist, and returns
// the JetStream (send tests publish on it) and the publisher of quota
// threshold alerts.
func connectAlerts(ctx context.Context, url string, replicas int, log *slog.Logger) (*nats.Conn, jetstream.JetStream, *quota.Alerts, error) {
	nc, js, err := bus.Connect(url, "sundial-gateway")
	if err != nil {
		return nil, nil, nil, err
	}
	streamCtx, cancel := context.WithTimeout(ctx, streamsTimeout)
	defer cancel()
	if err := event.EnsureStreams(streamCtx, js, replicas); err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	alerts, err := quota.NewAlerts(js, replicas, log, alertDrainTimeout)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	return nc, js, alerts, nil
}

// Addr is the address the listener is bound to.
func (a *App) Addr() string {
	return a.listener.Addr().String()
}

// AdminAddr is the address the admin listener is bound to.
func (a *App) AdminAddr() string {
	return a.admin.Addr()
}

// Run serves until ctx is done, then stops accepting connections, lets
// in-flight requests finish for up to ShutdownTimeout, publishes the quota
// alerts they queued, and closes the connections.
func (a *App) Run(ctx context.Context) error {
	defer a.pool.Close()
	defer a.nc.Close()
	// The background work outlives ctx until the server has stopped: the
	// last requests may still queue alerts.
	background, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { a.admin.Run(ctx) })
	wg.Go(func() { a.alerts.Run(background) })
	wg.Go(func() { a.sweeper.Run(background) })
	wg.Go(func() { a.resealSecrets(background) })
	wg.Go(func() { a.hub.Run(background) })
	wg.Go(func() { a.sessions.Run(background) })
	if a.batcher != nil {
		// Stopped with the background work, once the server has answered
		// the last request: until then its creates need it.
		wg.Go(func() { a.batcher.Run(background) })
	}
	// The bulk job runner stops with ctx, not with the background work: at
	// SIGTERM it hands its job back at once, for another gateway to go on
	// with, rather than running batches through the shutdown. Its own
	// context also stops it when serving fails.
	jobs, stopJobs := context.WithCancel(ctx)
	if !a.cfg.NoBulkJobs {
		wg.Go(func() { a.bulkJobs.Run(jobs) })
	}
	defer func() {
		stopJobs()
		stopBackground()
		wg.Wait()
	}()
	served := make(chan error, 1)
	go func() { served <- a.server.Serve(a.listener) }()
	a.log.Info("serving", "addr", a.Addr(), "tzdata", calendar.Current().Version)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ShutdownTimeout)
	defer cancel()
	// The listener sockets first: the server's Shutdown does not wait for
	// hijacked connections, and their clients are told to reconnect
	// (closing) to another replica.
	if err := a.hub.Shutdown(shutdownCtx); err != nil {
		a.log.Warn("listener presence not cleared at shutdown", "error", err)
	}
	err := a.server.Shutdown(shutdownCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = errors.Join(err, a.server.Close())
	}
	if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	a.log.Info("stopped")
	return nil
}

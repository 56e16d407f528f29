package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/api"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Timeouts of the HTTP server. They bound what a slow or stalled client
// can hold: a connection, a goroutine, a body buffer.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 120 * time.Second
)

// App is the gateway: an HTTP server in front of PostgreSQL.
type App struct {
	cfg      Config
	log      *slog.Logger
	pool     *pgxpool.Pool
	listener net.Listener
	server   *http.Server
}

// New connects to the database and binds the listener, so that a bad
// configuration fails here, and starts no goroutine.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	pool, err := postgres.Connect(ctx, cfg.DatabaseURL, int32(cfg.DatabaseMaxConns))
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	listener, err := lc.Listen(ctx, "tcp", cfg.HTTPAddr)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	queries := store.New(pool)
	handler := api.New(api.Deps{
		Config: api.Config{HeaderPrefix: cfg.HeaderPrefix, MaxDataBytes: cfg.MaxDataBytes},
		Log:    log,
		Keys:   apikey.NewVerifier(queries),
		Hooks:  hook.NewService(pool),
		Ready: func(ctx context.Context) error {
			_, err := queries.DatabaseNow(ctx)
			return err
		},
	})
	server := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return &App{cfg: cfg, log: log, pool: pool, listener: listener, server: server}, nil
}

// Addr is the address the listener is bound to.
func (a *App) Addr() string {
	return a.listener.Addr().String()
}

// Run serves until ctx is done, then stops accepting connections, lets
// in-flight requests finish for up to ShutdownTimeout, and closes the pool.
func (a *App) Run(ctx context.Context) error {
	defer a.pool.Close()
	served := make(chan error, 1)
	go func() { served <- a.server.Serve(a.listener) }()
	a.log.Info("serving", "addr", a.Addr())

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ShutdownTimeout)
	defer cancel()
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

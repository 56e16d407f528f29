// Package adminhttp is the admin HTTP listener every Sundial service runs
// beside its work (docs/observability.md, "Metrics, health and
// readiness"): /healthz says the process is alive, /readyz whether its
// dependencies answer now, /metrics serves its instruments in the
// Prometheus text format. It is meant for an operator's network, not the
// public one: it has no authentication.
package adminhttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// CheckTimeout bounds the whole of one /readyz request's checks: a
// dependency slower than that is not ready, and a probe never piles up
// requests behind a hung one.
const CheckTimeout = 2 * time.Second

// shutdownTimeout bounds the wait for requests in progress when the
// service stops; the admin requests are short.
const shutdownTimeout = 5 * time.Second

// Check is one dependency /readyz asks, in order; the first that fails
// makes the service not ready.
type Check struct {
	// Name goes in the 503 answer: "database", "nats".
	Name  string
	Probe func(context.Context) error
}

// Server is a bound admin listener, serving once Run is called.
type Server struct {
	listener net.Listener
	server   *http.Server
	log      *slog.Logger
}

// New binds addr (port 0 picks a free one) and routes the admin endpoints:
// metrics serves /metrics, checks decide /readyz. setting is the variable
// addr comes from, which an address in use names.
func New(ctx context.Context, addr, setting string, metrics http.Handler, checks []Check, log *slog.Logger) (*Server, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener on %s: %w (%s moves it; port 0 picks a free one)", addr, err, setting)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /readyz", readyz(checks, log))
	mux.Handle("GET /metrics", metrics)
	return &Server{
		listener: l,
		log:      log,
		server: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 5 * time.Second,
			WriteTimeout:      30 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}, nil
}

// readyz answers 200 "ready" when every check passes within CheckTimeout,
// else 503 naming the first that failed. Why it failed goes to the log,
// not the answer: an error's text can name hosts, users and addresses.
func readyz(checks []Check, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), CheckTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		for _, c := range checks {
			if err := c.Probe(ctx); err != nil {
				log.Warn("not ready", "check", c.Name, "err", err)
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = fmt.Fprintf(w, "not ready: %s\n", c.Name)
				return
			}
		}
		_, _ = fmt.Fprintln(w, "ready")
	})
}

// Addr is the address the listener is bound to.
func (s *Server) Addr() string {
	return s.listener.Addr().String()
}

// Run serves until ctx is done, then shuts the server down, letting the
// requests in progress finish for a few seconds. A failure is logged, not
// returned: the service's work goes on without its admin listener.
func (s *Server) Run(ctx context.Context) {
	served := make(chan error, 1)
	go func() { served <- s.server.Serve(s.listener) }()
	s.log.Info("admin listener serving", "addr", s.Addr())
	select {
	case err := <-served:
		s.log.Error("admin listener stopped", "error", err)
		return
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err := s.server.Shutdown(shutdownCtx)
	if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	if err != nil {
		s.log.Warn("admin listener shutdown", "error", err)
	}
}

// CheckAddr tells whether addr is a host:port a Server can bind; the
// services' Config.Validate use it.
func CheckAddr(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("want host:port, e.g. :9090: %w", err)
	}
	return nil
}

// Close releases the listener of a Server that never ran.
func (s *Server) Close() error {
	return s.listener.Close()
}

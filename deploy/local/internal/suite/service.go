package suite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sundial-run/sundial/pkg/envconf"
)

// Runner is a booted service: Run works until ctx is done, then shuts down
// and returns.
type Runner interface {
	Run(ctx context.Context) error
}

// addresser is a service that listens for clients (the gateway).
type addresser interface {
	Addr() string
}

// Service is one of Sundial's services, booted in this process.
type Service struct {
	Name string
	// New reads the service's configuration from env and builds it,
	// starting no work.
	New func(ctx context.Context, env envconf.Lookup, log *slog.Logger) (Runner, error)
}

// App adapts a service's app package (ConfigFromEnv and New) to a Service.
func App[C any, A Runner](name string,
	configFromEnv func(envconf.Lookup) (C, error),
	newApp func(context.Context, C, *slog.Logger) (A, error),
) Service {
	return Service{Name: name, New: func(ctx context.Context, env envconf.Lookup, log *slog.Logger) (Runner, error) {
		cfg, err := configFromEnv(env)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		return newApp(ctx, cfg, log)
	}}
}

type booted struct {
	name   string
	runner Runner
}

type outcome struct {
	name string
	err  error
}

// group runs booted services until they are told to stop.
type group struct {
	cancel   context.CancelFunc
	outcomes chan outcome
	running  int
}

// boot builds every service in order. When one fails, those already built
// are run with a cancelled context, which makes them close what New opened.
// Once the gateway listens, the services built after it get its address as
// SUNDIAL_PUBLIC_URL (unless the person set one): the dispatcher builds the
// async ack and nack URLs on it.
func boot(ctx context.Context, services []Service, env *environment, logFor func(string) *slog.Logger, grace time.Duration) ([]booted, error) {
	var done []booted
	for _, s := range services {
		r, err := s.New(ctx, env.lookup, logFor(s.Name))
		if err != nil {
			g := run(ctx, done)
			return nil, errors.Join(fmt.Errorf("start %s: %w", s.Name, err), g.stop(grace))
		}
		done = append(done, booted{name: s.Name, runner: r})
		if a, ok := r.(addresser); ok {
			if base := apiBase(a.Addr()); base != "" {
				env.decide("SUNDIAL_PUBLIC_URL", strings.TrimSuffix(base, "/v1"))
			}
		}
	}
	return done, nil
}

// run starts every service's Run. The services get a context of their own,
// not ctx: on Ctrl-C the runner decides when and in which order things stop.
func run(ctx context.Context, services []booted) *group {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g := &group{cancel: cancel, outcomes: make(chan outcome, len(services)), running: len(services)}
	for _, s := range services {
		go func() { g.outcomes <- outcome{name: s.name, err: s.runner.Run(runCtx)} }()
	}
	return g
}

// wait returns when ctx is done (nil) or when a service stops by itself
// (its error: services only stop when told to).
func (g *group) wait(ctx context.Context) error {
	if g.running == 0 {
		<-ctx.Done()
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case o := <-g.outcomes:
		g.running--
		if o.err == nil {
			o.err = errors.New("stopped by itself")
		}
		return fmt.Errorf("%s: %w", o.name, o.err)
	}
}

// stop tells every service to stop and waits up to grace for their Run to
// return, collecting the errors of those that failed to stop cleanly.
func (g *group) stop(grace time.Duration) error {
	g.cancel()
	timeout := time.NewTimer(grace)
	defer timeout.Stop()
	var errs []error
	for ; g.running > 0; g.running-- {
		select {
		case o := <-g.outcomes:
			if o.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", o.name, o.err))
			}
		case <-timeout.C:
			errs = append(errs, fmt.Errorf("%d service(s) still running after %s", g.running, grace))
			return errors.Join(errs...)
		}
	}
	return errors.Join(errs...)
}

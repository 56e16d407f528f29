// Package suite runs all of Sundial on one machine for `make run`: it finds
// or starts PostgreSQL and NATS, migrates, starts a demo receiver, boots the
// four services in this process, creates a demo project (or reuses the one
// an earlier run kept), prints how to use them, and on Ctrl-C stops
// everything in order.
package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sundial-run/sundial/deploy/local/internal/broker"
	"github.com/sundial-run/sundial/deploy/local/internal/receiver"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/testkit/pgserver"
)

// DatabaseName is the database created on a server the runner found or
// started (not on one named by SUNDIAL_DATABASE_URL).
const DatabaseName = "sundial"

// Credentials are the demo project's id and keys, as kept in DemoFile.
type Credentials struct {
	ProjectID  string `json:"projectId"`
	APIKey     string `json:"apiKey"`
	SigningKey string `json:"signingKey"`
}

// CreateProject creates a project delivering to domain, its secrets sealed
// with secretKeys (SUNDIAL_SECRET_KEYS): the gateway's app.CreateProject.
type CreateProject func(ctx context.Context, databaseURL, secretKeys, name, domain string) (Credentials, error)

// CreateUser makes email an owner of the project with password (the
// gateway's app.CreateUser, for demos).
type CreateUser func(ctx context.Context, databaseURL, projectID, email, password string) error

// Options say what to run; only Services and CreateProject are required.
type Options struct {
	Services      []Service
	CreateProject CreateProject
	// CreateUser, when set, makes the dashboard's demo user (DemoEmail),
	// with a new password each run, shown in the banner.
	CreateUser CreateUser
	// Lookup is the person's environment; nil means os.LookupEnv.
	Lookup envconf.Lookup
	// NATSPort is tried first for the embedded NATS server; 0 takes any.
	NATSPort int
	// Stdout gets the banner and the demo receiver's lines, Stderr the
	// JSON logs; default os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// Ready, when set, is called once everything runs.
	Ready func(Info)
	// Grace bounds each step of shutting down; default 30s.
	Grace time.Duration
}

// Run runs the suite until ctx is done or a service fails, then stops
// everything it started, newest first.
func Run(ctx context.Context, opts Options) (err error) {
	opts = opts.withDefaults()
	set, err := readSettings(opts.Lookup)
	if err != nil {
		return err
	}
	log := telemetry.NewLogger(opts.Stderr, "sundial-local", set.logLevel)
	var down teardown
	defer func() { err = errors.Join(err, down.run(log, opts.Grace)) }()

	if err := makeDataDir(set.dataDir); err != nil {
		return err
	}
	info, env, recv, err := prepare(ctx, opts, set, log, &down)
	if err != nil {
		return err
	}
	logFor := func(name string) *slog.Logger { return telemetry.NewLogger(opts.Stderr, name, set.logLevel) }
	services, err := boot(ctx, opts.Services, env, logFor, opts.Grace)
	if err != nil {
		return err
	}
	for _, s := range services {
		if a, ok := s.runner.(addresser); ok {
			info.APIBase = apiBase(a.Addr())
		}
	}
	g := run(ctx, services)
	if set.demo {
		if err := demo(ctx, opts, set, env, recv, &info, log); err != nil {
			return errors.Join(err, g.stop(opts.Grace))
		}
	}
	_, _ = io.WriteString(opts.Stdout, banner(info))
	if opts.Ready != nil {
		opts.Ready(info)
	}
	err = g.wait(ctx)
	log.Info("stopping services")
	return errors.Join(err, g.stop(opts.Grace))
}

func (o Options) withDefaults() Options {
	if o.Lookup == nil {
		o.Lookup = os.LookupEnv
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Grace == 0 {
		o.Grace = 30 * time.Second
	}
	return o
}

// prepare brings up what the services need (the demo receiver among them)
// and decides their environment.
func prepare(ctx context.Context, opts Options, set settings, log *slog.Logger, down *teardown) (Info, *environment, *receiver.Receiver, error) {
	env := &environment{user: opts.Lookup, decided: map[string]string{}}
	var info Info
	dbURL, err := database(ctx, opts, set, log, down, &info)
	if err != nil {
		return info, nil, nil, err
	}
	env.decide("SUNDIAL_DATABASE_URL", dbURL)
	if v, ok := opts.Lookup(secretbox.EnvVar); !ok || strings.TrimSpace(v) == "" {
		keys, err := localSecretKeys(set.dataDir)
		if err != nil {
			return info, nil, nil, err
		}
		env.decide(secretbox.EnvVar, keys)
	}
	natsURL, err := natsServer(opts, set, log, down, &info)
	if err != nil {
		return info, nil, nil, err
	}
	env.decide("SUNDIAL_NATS_URL", natsURL)
	info.CAFile = filepath.Join(set.dataDir, "demo-receiver-ca.pem")
	addrFile := filepath.Join(set.dataDir, ReceiverAddrFile)
	previous, _ := os.ReadFile(addrFile) // none on the first run
	recv, err := receiver.Start(receiver.Options{
		CAFile:       info.CAFile,
		HeaderPrefix: set.headerPrefix,
		// stdout, beside the banner, whatever the log level: these lines are
		// what a person trying Sundial watches, not diagnostics.
		Log:  telemetry.NewLogger(opts.Stdout, "demo-receiver", "info"),
		Addr: strings.TrimSpace(string(previous)),
	})
	if err != nil {
		return info, nil, nil, err
	}
	if err := os.WriteFile(addrFile, []byte(recv.Host()+"\n"), 0o600); err != nil {
		_ = recv.Shutdown(context.Background())
		return info, nil, nil, fmt.Errorf("demo receiver: %w", err)
	}
	down.add("demo receiver", recv.Shutdown)
	info.ReceiverURL = "https://" + recv.Host()
	if !env.decide("SUNDIAL_DELIVERY_CA_FILE", info.CAFile) {
		log.Warn("SUNDIAL_DELIVERY_CA_FILE is set, so the dispatcher may not trust the demo receiver's certificate", "demo_ca", info.CAFile)
	}
	info.AllowedPrivate = env.decide("SUNDIAL_DELIVERY_ALLOW_PRIVATE", "true")
	return info, env, recv, nil
}

// demo sets up the demo project once the services run (reusing one needs
// the gateway) and gives the receiver its signing key.
func demo(ctx context.Context, opts Options, set settings, env *environment, recv *receiver.Receiver, info *Info, log *slog.Logger) error {
	keys, _ := env.lookup(secretbox.EnvVar)
	creds, reused, err := demoProject(ctx, opts, set.dataDir, info.DatabaseURL, keys, info.APIBase, recv.Host(), log)
	if err != nil {
		return err
	}
	recv.SetSigningKey(creds.SigningKey)
	info.Project, info.ProjectReused = &creds, reused
	if opts.CreateUser != nil {
		login, err := demoUser(ctx, opts.CreateUser, info.DatabaseURL, creds.ProjectID)
		if err != nil {
			return err
		}
		info.Login = &login
	}
	info.ProjectFile = filepath.Join(set.dataDir, DemoFile)
	log.Info("demo project ready", "project_id", creds.ProjectID, "reused", reused, "domain", recv.Host())
	return nil
}

// database finds or starts PostgreSQL, makes sure the sundial database
// exists (unless the person named one) and migrates it.
func database(ctx context.Context, opts Options, set settings, log *slog.Logger, down *teardown, info *Info) (string, error) {
	srv, err := pgserver.Ensure(ctx, pgserver.Options{
		EnvVars: []string{"SUNDIAL_DATABASE_URL"},
		Lookup:  opts.Lookup,
		DataDir: filepath.Join(set.dataDir, "postgres"),
		Durable: true, // kept between runs
		Log:     log,
	})
	if err != nil {
		return "", err
	}
	if srv.Source == pgserver.Cluster {
		down.add("postgres", srv.Stop)
	}
	dbURL := srv.URL
	switch srv.Source {
	case pgserver.FromEnv:
		info.Postgres = "named by SUNDIAL_DATABASE_URL"
	case pgserver.Local:
		info.Postgres = "the server on " + hostOf(srv.URL)
	case pgserver.Cluster:
		info.Postgres = fmt.Sprintf("a cluster in %s on %s (stopped with Ctrl-C, data kept)", srv.DataDir, hostOf(srv.URL))
	}
	if srv.Source != pgserver.FromEnv {
		if dbURL, err = pgserver.EnsureDatabase(ctx, srv.URL, DatabaseName); err != nil {
			return "", err
		}
	}
	info.DatabaseURL = dbURL
	info.Postgres = pgserver.Redact(dbURL) + ", " + info.Postgres
	applied, err := postgres.Migrate(ctx, dbURL)
	if err != nil {
		return "", err
	}
	log.Info("migrated", "applied", applied)
	return dbURL, nil
}

// natsServer returns SUNDIAL_NATS_URL, or starts an embedded server.
func natsServer(opts Options, set settings, log *slog.Logger, down *teardown, info *Info) (string, error) {
	if set.natsURL != "" {
		info.NATS = set.natsURL + ", named by SUNDIAL_NATS_URL"
		return set.natsURL, nil
	}
	storeDir := filepath.Join(set.dataDir, "nats")
	srv, err := broker.Start(broker.Options{StoreDir: storeDir, Port: opts.NATSPort})
	if err != nil {
		return "", err
	}
	down.add("nats", func(context.Context) error { srv.Shutdown(); return nil })
	log.Info("started an embedded NATS server", "url", srv.URL, "store", storeDir)
	info.NATS = fmt.Sprintf("%s, embedded (JetStream store in %s)", srv.URL, storeDir)
	return srv.URL, nil
}

// makeDataDir creates the folder of the runner's state. PostgreSQL may run
// as another user (as root we cannot run it ourselves), who must be able to
// pass through this folder to reach its cluster: it is Sundial's own folder,
// so we open it for that (search only, not listing) if it is not.
func makeDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o001 == 0 {
		return os.Chmod(dir, perm|0o011)
	}
	return nil
}

func hostOf(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "(unknown)"
	}
	return u.Host
}

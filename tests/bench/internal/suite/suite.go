// Package suite runs all of Sundial on this machine for one benchmark
// scenario: a fresh migrated database on the given PostgreSQL server, NATS
// JetStream as its own process, the HTTPS receiver, a project whose domain
// is the receiver (with its quota and rate limit raised), and the four
// services as separate processes configured by environment variables.
package suite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
)

// readyTimeout bounds the wait for a process to say it is ready.
const readyTimeout = 60 * time.Second

// stopGrace is how long a service may take to stop after SIGTERM.
const stopGrace = 30 * time.Second

// Options describe one suite.
type Options struct {
	// Scenario names the database and the folder of the logs.
	Scenario string
	// Dir receives the logs, the NATS store and the receiver's CA file.
	Dir string
	// AdminURL is a PostgreSQL URL allowed to create databases.
	AdminURL string
	Bin      Binaries
	// Arrivals is the receiver's capacity.
	Arrivals int
	// ServiceEnv are settings for every service on top of the suite's own
	// (e.g. SUNDIAL_DISPATCHER_CONCURRENCY=128).
	ServiceEnv map[string]string
	// Prepare runs after the project is made and before the services
	// start, e.g. to load a backlog of hooks.
	Prepare func(ctx context.Context, dbURL string, project Credentials, domain string) error
	// KeepDatabase leaves the database behind for inspection.
	KeepDatabase bool
}

// Credentials are what `gateway admin create-project --json` prints.
type Credentials struct {
	ProjectID  string `json:"projectId"`
	APIKey     string `json:"apiKey"`
	SigningKey string `json:"signingKey"`
}

// Suite is a running Sundial.
type Suite struct {
	DBURL    string
	dbName   string
	opts     Options
	Receiver *receiver.Receiver
	Project  Credentials
	// APIBase is the gateway's root URL, e.g. http://127.0.0.1:41234.
	APIBase string
	// NATSMonitor is the NATS server's monitoring root URL.
	NATSMonitor string
	natsURL     string
	// Settings are the environment variables every service got, beyond
	// URLs and file paths: what a user would set to run it this way.
	Settings map[string]string
	// PprofAddr maps a service to its pprof address, when profiled.
	PprofAddr map[string]string

	NATS     *Process
	Services map[string]*Process // gateway, scheduler, dispatcher, notifier
}

// serviceSettings are the settings the benchmark gives every service:
// deliveries may reach the receiver on 127.0.0.1, logs at the default
// level, and a shutdown short enough not to stretch a run.
var serviceSettings = map[string]string{
	"SUNDIAL_DELIVERY_ALLOW_PRIVATE": "true",
	"SUNDIAL_LOG_LEVEL":              "info",
	"SUNDIAL_SHUTDOWN_TIMEOUT":       "10s",
}

// Plan is the project's raised plan: the benchmark creates far more hooks
// than the default plan allows, far faster than its rate limit.
var Plan = []string{"--quota", "100000000", "--rate-limit", "100000", "--rate-burst", "1000000"}

// Start starts everything; on error what was started is stopped.
func Start(ctx context.Context, opts Options) (s *Suite, err error) {
	s = &Suite{opts: opts, Services: map[string]*Process{}, PprofAddr: map[string]string{}}
	defer func() {
		if err != nil {
			_ = s.Close(context.WithoutCancel(ctx))
			s = nil
		}
	}()
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	if s.Receiver, err = receiver.Start(opts.Arrivals, opts.Dir); err != nil {
		return nil, err
	}
	if s.dbName, s.DBURL, err = CreateDatabase(ctx, opts.AdminURL, opts.Scenario); err != nil {
		return nil, err
	}
	if err := s.startNATS(); err != nil {
		return nil, err
	}
	s.Settings = maps.Clone(serviceSettings)
	maps.Copy(s.Settings, opts.ServiceEnv)
	if err := s.prepareDatabase(ctx); err != nil {
		return nil, err
	}
	for _, name := range []string{"gateway", "scheduler", "dispatcher", "notifier"} {
		if err := s.startService(ctx, name); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// prepareDatabase migrates, creates the project, raises its plan and runs
// Prepare, all through the gateway binary as an operator would.
func (s *Suite) prepareDatabase(ctx context.Context) error {
	if _, err := s.gatewayCommand(ctx, "migrate"); err != nil {
		return err
	}
	out, err := s.gatewayCommand(ctx, "admin", "create-project", "--name", "bench", "--domain", s.Receiver.Domain(), "--json")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, &s.Project); err != nil {
		return fmt.Errorf("create-project output: %w", err)
	}
	if _, err := s.gatewayCommand(ctx, append([]string{"admin", "set-plan", "--project", s.Project.ProjectID}, Plan...)...); err != nil {
		return err
	}
	if s.opts.Prepare != nil {
		return s.opts.Prepare(ctx, s.DBURL, s.Project, s.Receiver.Domain())
	}
	return nil
}

func (s *Suite) gatewayCommand(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.opts.Bin.Gateway, args...)
	cmd.Env = s.env(nil)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gateway %s: %w: %s", strings.Join(args[:min(2, len(args))], " "), err, stderr.String())
	}
	return out, nil
}

// env is the process environment minus Sundial's, OpenTelemetry's and the
// benchmark's own variables, plus the suite's settings and extra.
func (s *Suite) env(extra map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SUNDIAL_") || strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "BENCH_") {
			continue
		}
		env = append(env, kv)
	}
	all := map[string]string{
		"SUNDIAL_DATABASE_URL":     s.DBURL,
		"SUNDIAL_DELIVERY_CA_FILE": s.Receiver.CAFile,
		// The services seal secrets at rest with it (package secretbox).
		"SUNDIAL_SECRET_KEYS": secrettest.Keys,
		// Replicas of a service run side by side: admin listeners on free ports.
		"SUNDIAL_GATEWAY_ADMIN_ADDR":    "127.0.0.1:0",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":  "127.0.0.1:0",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR": "127.0.0.1:0",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":   "127.0.0.1:0",
	}
	if s.NATS != nil {
		all["SUNDIAL_NATS_URL"] = s.natsURL
	}
	maps.Copy(all, s.Settings)
	maps.Copy(all, extra)
	for _, k := range slices.Sorted(maps.Keys(all)) {
		env = append(env, k+"="+all[k])
	}
	return env
}

func (s *Suite) startService(ctx context.Context, name string) error {
	return s.runService(ctx, name, false)
}

// KillService kills one service with SIGKILL, as a crash would.
func (s *Suite) KillService(name string) {
	if p := s.Services[name]; p != nil {
		p.Kill()
	}
}

// StartKilledService starts one service again after KillService,
// appending to its log, and waits until it is ready. Its processor time
// and peak RSS from then on are the new process's.
func (s *Suite) StartKilledService(ctx context.Context, name string) error {
	return s.runService(ctx, name, true)
}

// runService starts one service and waits until it is ready; appendLog
// keeps what its log holds and waits for a ready line after it.
func (s *Suite) runService(ctx context.Context, name string, appendLog bool) error {
	extra := map[string]string{}
	if name == "gateway" {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		extra["SUNDIAL_HTTP_ADDR"] = addr
		s.APIBase = "http://" + addr
	}
	if s.opts.Bin.Profiled {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		extra["BENCH_PPROF_ADDR"] = addr
		s.PprofAddr[name] = addr
	}
	bin := map[string]string{"gateway": s.opts.Bin.Gateway, "scheduler": s.opts.Bin.Scheduler,
		"dispatcher": s.opts.Bin.Dispatcher, "notifier": s.opts.Bin.Notifier}[name]
	logPath := filepath.Join(s.opts.Dir, name+".log")
	start, from := StartProcess, int64(0)
	if appendLog {
		start = RestartProcess
		if st, err := os.Stat(logPath); err == nil {
			from = st.Size()
		}
	}
	p, err := start(name, bin, nil, s.env(extra), logPath)
	if err != nil {
		return err
	}
	s.Services[name] = p
	if name == "gateway" {
		return waitHTTP(ctx, p, s.APIBase+"/healthz")
	}
	return waitLog(ctx, p, name+" running", from)
}

// startNATS starts benchnats and reads its ready line.
func (s *Suite) startNATS() error {
	store := filepath.Join(s.opts.Dir, "nats")
	readyPath := filepath.Join(s.opts.Dir, "nats.log")
	p, err := StartProcess("nats", s.opts.Bin.NATS, []string{"-store", store}, s.env(nil), readyPath)
	if err != nil {
		return err
	}
	s.NATS = p
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("nats exited: %v (see %s)", err, readyPath)
		}
		raw, _ := os.ReadFile(readyPath)
		if line, _, ok := bytes.Cut(raw, []byte("\n")); ok {
			var ready struct{ URL, Monitor string }
			if err := json.Unmarshal(line, &ready); err != nil {
				return fmt.Errorf("nats ready line %q: %w", line, err)
			}
			s.natsURL, s.NATSMonitor = ready.URL, ready.Monitor
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("nats not ready within " + readyTimeout.String())
}

// waitHTTP polls url until it answers 200.
func waitHTTP(ctx context.Context, p *Process, url string) error {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("%s exited: %v (see %s)", p.Name, err, p.LogPath)
		}
		resp, err := http.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within %s (see %s)", p.Name, readyTimeout, p.LogPath)
}

// waitLog polls the process's log, from byte from on, for a line
// containing msg.
func waitLog(ctx context.Context, p *Process, msg string, from int64) error {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("%s exited: %v (see %s)", p.Name, err, p.LogPath)
		}
		if f, err := os.Open(p.LogPath); err == nil {
			_, _ = f.Seek(from, io.SeekStart)
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				if strings.Contains(sc.Text(), `"msg":"`+msg+`"`) {
					_ = f.Close()
					return nil
				}
			}
			_ = f.Close()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within %s (see %s)", p.Name, readyTimeout, p.LogPath)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// PeakRSS reads each running service's peak resident set size, in bytes.
func (s *Suite) PeakRSS() map[string]int64 {
	out := map[string]int64{}
	for name, p := range s.Services {
		if rss, err := p.PeakRSS(); err == nil {
			out[name] = rss
		}
	}
	if s.NATS != nil {
		if rss, err := s.NATS.PeakRSS(); err == nil {
			out["nats"] = rss
		}
	}
	return out
}

// CPU reads the processor time used so far by each service, NATS, this
// benchmark process (receiver and API client) and all of the machine's
// PostgreSQL processes.
func (s *Suite) CPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, p := range s.Services {
		if d, err := p.CPU(); err == nil {
			out[name] = d
		}
	}
	if s.NATS != nil {
		if d, err := s.NATS.CPU(); err == nil {
			out["nats"] = d
		}
	}
	maps.Copy(out, MachineCPU())
	return out
}

// StopService stops one service gracefully.
func (s *Suite) StopService(name string) error {
	if p := s.Services[name]; p != nil {
		return p.Stop(stopGrace)
	}
	return nil
}

// Close stops the services (dispatchers first, so no delivery starts after
// the scheduler is gone), NATS and the receiver, and drops the database.
func (s *Suite) Close(ctx context.Context) error {
	var errs []error
	for _, name := range []string{"dispatcher", "scheduler", "notifier", "gateway"} {
		if p := s.Services[name]; p != nil {
			if err := p.Stop(stopGrace); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
	}
	if s.NATS != nil {
		if err := s.NATS.Stop(stopGrace); err != nil {
			errs = append(errs, fmt.Errorf("nats: %w", err))
		}
	}
	if s.Receiver != nil {
		closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		errs = append(errs, s.Receiver.Close(closeCtx))
		cancel()
	}
	if s.dbName != "" && !s.opts.KeepDatabase {
		errs = append(errs, DropDatabase(ctx, s.opts.AdminURL, s.dbName))
	}
	return errors.Join(errs...)
}

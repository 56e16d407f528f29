// Package baseline is the benchmark's handle on the river baseline: hook
// delivery built the way a team would build it without Sundial (program
// cmd/riverbase on riverqueue/river). Start runs riverbase as a process
// against a database and the benchmark's receiver; Schedule inserts jobs
// from the benchmark process through an insert-only river client, by COPY
// (InsertManyFast), each due at its instant (ScheduledAt).
package baseline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/sundial-run/sundial/tests/bench/internal/baseline/delivery"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// readyMsg is the message of riverbase's ready line.
const readyMsg = "riverbase ready"

// MinLead is how far ahead of its instant a job should be scheduled for
// its lateness to be river's polling's alone. River stores a job with a
// future ScheduledAt as "scheduled"; its leader makes due ones "available"
// every 5 s (not configurable), looking 5 s ahead. A job scheduled less
// than 5 s ahead may wait for that sweep, up to 5 s past its instant.
const MinLead = 6 * time.Second

const (
	readyTimeout = 60 * time.Second
	stopGrace    = 30 * time.Second
	// insertChunk bounds the jobs of one COPY (and the memory of their
	// encoded arguments).
	insertChunk = 10_000
	// backlogWriters is how many COPYs of a backlog run at once: on two
	// CPUs, one encodes while PostgreSQL writes the other.
	backlogWriters = 2
)

// Options describe one baseline.
type Options struct {
	// DatabaseURL is the database river works in; with CreateDatabase it
	// is a server URL allowed to create databases instead.
	DatabaseURL string
	// ReceiverURL is the receiver's https://host:port (a bare host:port
	// gets https://).
	ReceiverURL string
	// CAFile is the PEM file the receiver's certificate is trusted from.
	CAFile     string
	SigningKey string
	// Dir receives riverbase.log.
	Dir string
	// Workers is riverbase's MaxWorkers; 0 keeps riverbase's default.
	Workers int
	// Env are more RIVERBASE_* settings (see cmd/riverbase/settings.go).
	Env map[string]string
	// Binary is the riverbase program (Build makes it).
	Binary string
	// CreateDatabase makes Start create a fresh database on DatabaseURL's
	// server, and Close drop it.
	CreateDatabase bool
}

// Baseline is a running riverbase and the benchmark's insert-only client.
type Baseline struct {
	proc *suite.Process
	// binary and env start the process again after Kill.
	binary   string
	env      []string
	pool     *pgxpool.Pool
	inserter *river.Client[pgx.Tx]
	settings map[string]string
	adminURL string
	dbName   string
	// analyzed says river_job has been analyzed once (see analyze).
	analyzed atomic.Bool
	// Last readings, so that they survive the process's exit.
	rss atomic.Int64
	cpu atomic.Int64
}

// Job is one delivery to schedule.
type Job struct {
	// ID is sent as Sundial-Id: a UUID, for the receiver.
	ID   string
	At   time.Time
	Path string
	// Retries, when above 0, gives the job that many retries (river's
	// MaxAttempts is one more), each RetryDelay after the failed attempt
	// ended (delivery.Worker's NextRetry), as a hook's fixed
	// retryOverride does; 0 keeps river's defaults (25 attempts, its
	// backoff).
	Retries    int
	RetryDelay time.Duration
}

// Start runs riverbase and waits until it works jobs (its schema migrated);
// on error, what was started is stopped.
func Start(ctx context.Context, opts Options) (_ *Baseline, err error) {
	if opts.Binary == "" {
		return nil, errors.New("baseline: Options.Binary is required (see Build)")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("baseline dir: %w", err)
	}
	b := &Baseline{}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.Close(context.WithoutCancel(ctx)))
		}
	}()
	dbURL := opts.DatabaseURL
	if opts.CreateDatabase {
		b.adminURL = opts.DatabaseURL
		if b.dbName, dbURL, err = suite.CreateDatabase(ctx, opts.DatabaseURL, "river"); err != nil {
			return nil, err
		}
	}
	b.binary, b.env = opts.Binary, environment(opts, dbURL)
	b.proc, err = suite.StartProcess("riverbase", b.binary, nil, b.env, filepath.Join(opts.Dir, "riverbase.log"))
	if err != nil {
		return nil, err
	}
	if b.settings, err = waitReady(ctx, b.proc, 0, readyTimeout); err != nil {
		return nil, err
	}
	if err := b.openInserter(ctx, dbURL); err != nil {
		return nil, err
	}
	return b, nil
}

// environment is the process environment minus any RIVERBASE_ variable,
// plus the baseline's.
func environment(opts Options, dbURL string) []string {
	receiverURL := opts.ReceiverURL
	if !strings.Contains(receiverURL, "://") {
		receiverURL = "https://" + receiverURL
	}
	all := map[string]string{
		"RIVERBASE_DATABASE_URL": dbURL,
		"RIVERBASE_RECEIVER_URL": receiverURL,
		"RIVERBASE_CA_FILE":      opts.CAFile,
		"RIVERBASE_SIGNING_KEY":  opts.SigningKey,
	}
	if opts.Workers > 0 {
		all["RIVERBASE_MAX_WORKERS"] = strconv.Itoa(opts.Workers)
	}
	maps.Copy(all, opts.Env)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RIVERBASE_") {
			env = append(env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		env = append(env, k+"="+all[k])
	}
	return env
}

// openInserter makes the insert-only client: no queues, no workers, the
// way an application's web process enqueues jobs.
func (b *Baseline) openInserter(ctx context.Context, dbURL string) error {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("baseline database: %w", err)
	}
	b.pool = pool
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		return fmt.Errorf("baseline insert client: %w", err)
	}
	b.inserter = client
	return nil
}

// Schedule inserts one delivery job per Job, due at its At, by COPY in
// chunks. Each job's payload is {"n":<its index in jobs>}, like the
// benchmark's hooks' data. See MinLead. The first call also analyzes
// river_job (see analyze), which takes a moment on a large backlog.
func (b *Baseline) Schedule(ctx context.Context, jobs []Job) error {
	for start := 0; start < len(jobs); start += insertChunk {
		chunk := jobs[start:min(start+insertChunk, len(jobs))]
		params := make([]river.InsertManyParams, len(chunk))
		for i, j := range chunk {
			opts := &river.InsertOpts{ScheduledAt: j.At}
			args := delivery.Args{ID: j.ID, Path: j.Path, Payload: payload(start + i)}
			if j.Retries > 0 {
				opts.MaxAttempts = j.Retries + 1
				args.RetryDelaySecs = int(j.RetryDelay / time.Second)
			}
			params[i] = river.InsertManyParams{Args: args, InsertOpts: opts}
		}
		if err := b.insert(ctx, params); err != nil {
			return err
		}
	}
	if b.analyzed.Load() {
		return nil
	}
	return b.analyze(ctx)
}

// analyze runs ANALYZE river_job. A fresh river_job has no statistics, and
// with none PostgreSQL plans river's scheduler query (scheduled ->
// available) badly: 1.4 to 1.6 s for 2,000 jobs instead of 50 ms, enough to
// make them late. A long-running deployment's table has been analyzed by
// autovacuum, so the first Schedule (or LoadBacklog) analyzes, once.
func (b *Baseline) analyze(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, statement("analyze-jobs")); err != nil {
		return fmt.Errorf("analyze river_job: %w", err)
	}
	b.analyzed.Store(true)
	return nil
}

func payload(n int) []byte { return []byte(`{"n":` + strconv.Itoa(n) + `}`) }

func (b *Baseline) insert(ctx context.Context, params []river.InsertManyParams) error {
	n, err := b.inserter.InsertManyFast(ctx, params)
	if err != nil {
		return fmt.Errorf("insert river jobs: %w", err)
	}
	if n != len(params) {
		return fmt.Errorf("insert river jobs: %d inserted, want %d", n, len(params))
	}
	return nil
}

// LoadBacklog inserts n jobs due between a year and a year and a day from
// now (never delivered during a run), by COPY in chunks on a few
// connections at once, then analyzes river_job.
func (b *Baseline) LoadBacklog(ctx context.Context, n int) error {
	start := time.Now().AddDate(1, 0, 0)
	step := 24 * time.Hour / time.Duration(max(n, 1))
	chunks := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range backlogWriters {
		wg.Go(func() {
			for first := range chunks {
				if err := b.insert(ctx, backlogChunk(first, min(first+insertChunk, n), start, step)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for first := 0; first < n && ctx.Err() == nil; first += insertChunk {
		chunks <- first
	}
	close(chunks)
	wg.Wait()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return fmt.Errorf("backlog: %w", err)
	}
	return b.analyze(ctx)
}

func backlogChunk(first, end int, start time.Time, step time.Duration) []river.InsertManyParams {
	params := make([]river.InsertManyParams, 0, end-first)
	for i := first; i < end; i++ {
		params = append(params, river.InsertManyParams{
			Args:       delivery.Args{ID: backlogID(i), Path: "/backlog", Payload: payload(i)},
			InsertOpts: &river.InsertOpts{ScheduledAt: start.Add(time.Duration(i) * step)},
		})
	}
	return params
}

// backlogID is a UUID-shaped id unique within a backlog (the receiver
// never sees these: they are due next year).
func backlogID(i int) string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
}

// Kill kills riverbase with SIGKILL, as a crash would; its last CPU and
// peak RSS readings are kept.
func (b *Baseline) Kill() {
	b.PeakRSS()
	b.CPU()
	b.proc.Kill()
}

// StartKilled starts riverbase again after Kill, with the same settings,
// appending to its log, and waits until it says it is ready again. Its
// CPU and peak RSS from then on are the new process's.
func (b *Baseline) StartKilled(ctx context.Context) error {
	var from int64
	if st, err := os.Stat(b.proc.LogPath); err == nil {
		from = st.Size()
	}
	p, err := suite.RestartProcess("riverbase", b.binary, nil, b.env, b.proc.LogPath)
	if err != nil {
		return err
	}
	b.proc = p
	_, err = waitReady(ctx, p, from, readyTimeout)
	return err
}

// PeakRSS is riverbase's peak resident set size (VmHWM) in bytes: read
// now, or the last reading once the process is gone.
func (b *Baseline) PeakRSS() int64 {
	if b.running() {
		if v, err := b.proc.PeakRSS(); err == nil {
			b.rss.Store(v)
		}
	}
	return b.rss.Load()
}

// CPU is the processor time riverbase has used (user + system): read now,
// or the last reading once the process is gone.
func (b *Baseline) CPU() time.Duration {
	if b.running() {
		if v, err := b.proc.CPU(); err == nil {
			b.cpu.Store(int64(v))
		}
	}
	return time.Duration(b.cpu.Load())
}

func (b *Baseline) running() bool {
	if b.proc == nil {
		return false
	}
	exited, _ := b.proc.Exited()
	return !exited
}

// Settings are the RIVERBASE_* settings in effect, as riverbase reported
// them when ready (neither the database URL nor the signing key).
func (b *Baseline) Settings() map[string]string { return maps.Clone(b.settings) }

// Close stops riverbase (SIGTERM, then its graceful stop), closes the
// insert client and drops the database if Start created it.
func (b *Baseline) Close(ctx context.Context) error {
	var errs []error
	if b.proc != nil {
		b.PeakRSS()
		b.CPU()
		errs = append(errs, b.proc.Stop(stopGrace))
	}
	if b.pool != nil {
		b.pool.Close()
	}
	if b.dbName != "" {
		errs = append(errs, suite.DropDatabase(ctx, b.adminURL, b.dbName))
	}
	return errors.Join(errs...)
}

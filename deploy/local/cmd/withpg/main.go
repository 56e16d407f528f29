// Command withpg runs a command with a PostgreSQL server at hand:
//
//	withpg [--data DIR] [--cluster] -- COMMAND ARGS...
//
// It uses SUNDIAL_TEST_DATABASE_URL or SUNDIAL_DATABASE_URL when set, else
// the server on 127.0.0.1:5432, else a throwaway cluster it starts (in DIR,
// or a temporary folder it removes afterwards); --cluster skips straight to
// the throwaway cluster. The command gets the
// server's administrative URL in SUNDIAL_TEST_DATABASE_URL, and withpg exits
// with the command's exit code. `make test` runs the test suites through it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sundial-run/sundial/deploy/local/internal/child"
	"github.com/sundial-run/sundial/testkit/pgserver"
)

func main() {
	os.Exit(run())
}

func run() int {
	data := flag.String("data", "", "keep the throwaway cluster in this folder (default: a temporary folder, removed afterwards)")
	force := flag.Bool("cluster", false, "always start a throwaway cluster, even when a server is configured or answers")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: withpg [--data DIR] [--cluster] -- COMMAND ARGS...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("cmd", "withpg")
	// Registered before the server starts so that a Ctrl-C during start-up
	// still stops what was started.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)

	srv, cleanup, err := ensure(signals, pgserver.Options{DataDir: *data, ForceCluster: *force, Log: log})
	defer cleanup()
	if err != nil {
		log.Error("no PostgreSQL server", "err", err)
		return 1
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "SUNDIAL_TEST_DATABASE_URL="+srv.URL)
	code, err := child.Run(cmd, signals, 30*time.Second)
	if err != nil {
		log.Error("command failed", "err", err)
	}
	return code
}

// ensure finds or starts a server; cleanup stops a cluster it started and
// removes a temporary data folder. A signal during start-up is an error.
func ensure(signals <-chan os.Signal, opts pgserver.Options) (*pgserver.Server, func(), error) {
	var tmp string
	if opts.DataDir == "" {
		var err error
		if tmp, err = os.MkdirTemp("", "sundial-withpg-"); err != nil {
			return nil, func() {}, err
		}
		opts.DataDir = filepath.Join(tmp, "pg")
	}
	opts.EnvVars = []string{"SUNDIAL_TEST_DATABASE_URL", "SUNDIAL_DATABASE_URL"}
	ctx, cancel := context.WithCancel(context.Background())
	interrupted := make(chan os.Signal, 1)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case sig := <-signals:
			interrupted <- sig
			cancel()
		case <-ctx.Done():
		}
	}()
	srv, err := pgserver.Ensure(ctx, opts)
	cancel()
	<-watched
	select {
	case sig := <-interrupted:
		err = fmt.Errorf("interrupted by %v", sig)
	default:
	}
	cleanup := func() {
		stopCtx, stop := context.WithTimeout(context.Background(), time.Minute)
		defer stop()
		if err := srv.Stop(stopCtx); err != nil {
			opts.Log.Error("stop the cluster", "err", err)
		}
		if tmp != "" {
			_ = os.RemoveAll(tmp)
		}
	}
	return srv, cleanup, err
}

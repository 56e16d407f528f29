// Command scheduler runs Sundial's scheduler: it claims due hooks, hands
// them to the dispatchers and applies their results. Configuration comes
// from the environment (see app.Config).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	// Mozilla's root certificates, used where the system has none: the
	// image holds the binaries and nothing else.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/gcdefault"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/scheduler/app"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Println(app.Name, app.Version)
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, app.Name+":", err)
		os.Exit(envconf.ExitStatus(err))
	}
}

// gc are the collector's defaults when the operator sets none. A burst
// allocates a batch's rows, events and statements for every few hundred
// hooks, and with Go's default (GOGC=100) collecting them was a large share
// of the scheduler's CPU; collecting half as often halves that. The soft
// limit caps what GOGC lets a burst's garbage grow to, so that while the
// live heap is small the whole process (the limit counts the Go runtime's
// memory, not the binary's pages) stays under 100 MiB resident, far below
// the memory limit that charts/sundial gives the scheduler's container
// (docs/operations.md, "Resources").
var gc = gcdefault.Settings{GOGC: 200, MemoryLimitMiB: 75}

func run() error {
	gcdefault.Apply(gc)
	cfg, err := app.ConfigFromEnv(nil)
	if err != nil {
		return &envconf.Error{Err: err}
	}
	log, logs := telemetry.NewBufferedLogger(os.Stderr, app.Name, cfg.LogLevel)
	defer logs.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	shutdown, err := telemetry.Setup(ctx, app.Name, app.Version)
	if err != nil {
		return err
	}
	defer func() {
		// ctx is done by now; flushing telemetry needs its own deadline.
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(flushCtx)
	}()
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

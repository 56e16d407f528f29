// Command dispatcher delivers due hooks to their receivers over HTTPS.
// Its configuration comes from the environment (see app.Config).
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
	"github.com/sundial-run/sundial/services/dispatcher/app"
)

const service = "dispatcher"

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Println(service, app.Version)
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "dispatcher:", err)
		os.Exit(envconf.ExitStatus(err))
	}
}

// gc are the collector's defaults when the operator sets none: the
// dispatcher's heap is small and short-lived (a delivery's buffers), so
// collecting half as often saves CPU in a burst, and the soft memory limit
// keeps the heap under the memory limit that charts/sundial gives the
// dispatcher's container whatever GOGC lets it grow to.
var gc = gcdefault.Settings{GOGC: 200, MemoryLimitMiB: 80}

func run() error {
	gcdefault.Apply(gc)
	cfg, err := app.ConfigFromEnv(nil)
	if err != nil {
		return &envconf.Error{Err: err}
	}
	log, logs := telemetry.NewBufferedLogger(os.Stderr, service, cfg.LogLevel)
	defer logs.Close()
	// Deliveries matter more than their telemetry: without it the
	// dispatcher still runs, and says so.
	if shutdown, err := telemetry.Setup(context.Background(), service, app.Version); err != nil {
		log.Error("telemetry not set up; running without traces and metrics", "err", err)
	} else {
		defer func() {
			// Flush with a fresh deadline: the signal context is done by now.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = shutdown(ctx)
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

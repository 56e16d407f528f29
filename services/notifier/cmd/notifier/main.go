// Command notifier runs Sundial's notifier: it consumes alerts from NATS and
// tells people about them. It is configured only by environment variables
// (see app.Config) and stops gracefully on SIGINT or SIGTERM.
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
	"github.com/sundial-run/sundial/services/notifier/app"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Println("notifier", app.Version)
		return
	}
	os.Exit(run())
}

func run() int {
	// Go's collector defaults, with a soft memory limit under the
	// container's.
	gcdefault.Apply(gcdefault.Settings{})
	cfg, err := app.ConfigFromEnv(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "notifier:", &envconf.Error{Err: err})
		return envconf.ExitCode
	}
	log, logs := telemetry.NewBufferedLogger(os.Stderr, "notifier", cfg.LogLevel)
	defer logs.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	shutdown, err := telemetry.Setup(ctx, "notifier", app.Version)
	if err != nil {
		log.Error("telemetry", "err", err)
		return 1
	}
	defer func() {
		// Flush what telemetry holds even though ctx is done by now.
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(flushCtx); err != nil {
			log.Warn("telemetry shutdown", "err", err)
		}
	}()

	a, err := app.New(ctx, cfg, log)
	if err != nil {
		log.Error("start", "err", err)
		return 1
	}
	if err := a.Run(ctx); err != nil {
		log.Error("run", "err", err)
		return 1
	}
	return 0
}

// Command sundial-local runs all of Sundial on one machine (`make run`):
// PostgreSQL (found or started), an embedded NATS server, the four services
// in this process, a demo receiver and a demo project. Ctrl-C stops it.
//
// Environment: the services' own variables (SUNDIAL_DATABASE_URL,
// SUNDIAL_NATS_URL, SUNDIAL_HTTP_ADDR, ...), plus SUNDIAL_DEMO=false to skip
// the demo project and SUNDIAL_LOCAL_DATA_DIR (default .data) for the kept
// PostgreSQL cluster, NATS store and demo CA certificate.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sundial-run/sundial/deploy/local/internal/broker"
	"github.com/sundial-run/sundial/deploy/local/internal/suite"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	shutdown, err := telemetry.Setup(ctx, "sundial-local", "dev")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sundial-local:", err)
		os.Exit(1)
	}
	err = suite.Run(ctx, suite.Options{
		Services:      services(),
		CreateProject: createProject,
		NATSPort:      broker.DefaultPort,
	})
	err = errors.Join(err, shutdown(context.WithoutCancel(ctx)))
	if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		fmt.Fprintln(os.Stderr, "sundial-local:", err)
		os.Exit(1)
	}
}

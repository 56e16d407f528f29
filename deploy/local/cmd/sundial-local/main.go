// Command sundial-local runs all of Sundial on one machine (`make run`):
// PostgreSQL (found or started), an embedded NATS server, the four services
// in this process, a demo receiver and a demo project. Ctrl-C stops it.
// `sundial-local --help` (`make run ARGS=--help`) says how to configure it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sundial-run/sundial/deploy/local/internal/broker"
	"github.com/sundial-run/sundial/deploy/local/internal/suite"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

const usage = `Usage: sundial-local [-h | --help]      (make run, make run ARGS=--help)

Runs all of Sundial on this machine until Ctrl-C: PostgreSQL (SUNDIAL_DATABASE_URL,
else a server on 127.0.0.1:5432, else a cluster of its own under the data folder),
an embedded NATS JetStream server (unless SUNDIAL_NATS_URL is set), the gateway
(SUNDIAL_HTTP_ADDR, default :8080), scheduler, dispatcher and notifier, a demo HTTPS
receiver on 127.0.0.1, and a demo project that delivers to it.

The demo project's id and keys are kept in <data folder>/demo-project.json (mode
0600) and reused by the next run while its database still has the project; delete
the file to get a new project.

Environment:
  SUNDIAL_LOCAL_DATA_DIR  data folder: PostgreSQL cluster, NATS store, demo CA
                          certificate, the demo receiver's address (reused when
                          free), demo project keys, and secret-keys, the
                          SUNDIAL_SECRET_KEYS made on the first run unless set
                          (default .data)
  SUNDIAL_DEMO            false: no demo project (default true)
  SUNDIAL_*               every service's own variables (docs/configuration.md);
                          SUNDIAL_DELIVERY_ALLOW_PRIVATE defaults to true here, so
                          that the demo receiver on 127.0.0.1 can be reached
`

func main() {
	if err := parseArgs(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
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
		CreateUser:    createUser,
		NATSPort:      broker.DefaultPort,
	})
	err = errors.Join(err, shutdown(context.WithoutCancel(ctx)))
	if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		fmt.Fprintln(os.Stderr, "sundial-local:", err)
		if errors.Is(err, secretbox.ErrWrongKeys) {
			fmt.Fprintln(os.Stderr, wrongKeysHint)
		}
		os.Exit(1)
	}
}

// wrongKeysHint says what to do when the database was sealed with other
// keys than the data folder's: the usual cause is a data folder removed
// (the natural reset) while the database, on a server of the machine,
// stayed.
const wrongKeysHint = `The database holds secrets sealed with other keys than <data folder>/secret-keys:
the data folder was probably removed while the database stayed. Either put back the
secret-keys file (or set SUNDIAL_SECRET_KEYS to the keys it held), or start afresh by
dropping the database, e.g. dropdb -h 127.0.0.1 -U postgres sundial, then make run.`

// parseArgs accepts -h and --help (flag.ErrHelp, after printing the usage
// to out) and nothing else: the runner is configured by the environment.
func parseArgs(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sundial-local", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { _, _ = io.WriteString(out, usage) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return nil
}

// Package cli is the gateway's command line: serve the API (the default),
// apply the database migrations, and administrative commands. It lives
// outside cmd/ so that tests can run each command in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/gateway/app"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // the command failed
	ExitUsage = 2 // the command line was wrong
)

const usage = `Usage:
  gateway [serve]       run the HTTP API
  gateway migrate       apply the database migrations
  gateway version       print the version
  gateway admin create-project --name NAME --domain HOST[:PORT] [--json]
  gateway admin create-user --email EMAIL --project ID --role owner|member|viewer
                        give a person a role in a project (creating the
                        user) and print a one-time set-password link (24 h)
  gateway admin set-plan --project ID [--quota N] [--hard-cap-percent P]
                         [--rate-limit PER_SECOND] [--rate-burst BURST]
                         [--max-retention-days DAYS] [--json]
  gateway admin reseal-secrets
                        seal every stored secret with the first key of
                        SUNDIAL_SECRET_KEYS (after adding a key, before
                        removing the old one)

Configuration comes from SUNDIAL_* environment variables.
`

// Env is what a command reads and writes besides its arguments.
type Env struct {
	Stdout, Stderr io.Writer
	// Lookup reads the environment; nil means the process environment.
	Lookup envconf.Lookup
}

// usageError is a wrong command line: exit code 2 after the message.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// Run runs the command that args (without the program name) name, and
// returns the process's exit code.
func Run(ctx context.Context, args []string, env Env) int {
	err := dispatch(ctx, args, env)
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "gateway: %s\n\n%s", ue.msg, usage)
		return ExitUsage
	default:
		fmt.Fprintf(env.Stderr, "gateway: %s\n", err)
		return envconf.ExitStatus(err)
	}
}

func dispatch(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 {
		return serve(ctx, nil, env)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], env)
	case "migrate":
		return migrate(ctx, args[1:], env)
	case "admin":
		return admin(ctx, args[1:], env)
	case "version":
		fmt.Fprintln(env.Stdout, "gateway", app.Version)
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	default:
		return usagef("unknown command %q", args[0])
	}
}

// parseFlags parses a subcommand's flags and refuses stray arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s: %s", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

func newFlagSet(name string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

func serve(ctx context.Context, args []string, env Env) error {
	if err := parseFlags(newFlagSet("serve", env), args); err != nil {
		return err
	}
	cfg, err := app.ConfigFromEnv(env.Lookup)
	if err != nil {
		return &envconf.Error{Err: err}
	}
	log, logs := telemetry.NewBufferedLogger(env.Stderr, "gateway", cfg.LogLevel)
	defer logs.Close()
	// Traces and metrics help operate the API but are not needed to serve
	// it, so a failed telemetry set-up is reported and the API still runs.
	if shutdown, err := telemetry.Setup(ctx, "gateway", app.Version); err != nil {
		log.Warn("telemetry disabled", "error", err)
	} else {
		defer func() {
			if err := shutdown(context.WithoutCancel(ctx)); err != nil {
				log.Warn("telemetry shutdown", "error", err)
			}
		}()
	}
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// Stdio is the process's own streams and environment, for main.
func Stdio() Env {
	return Env{Stdout: os.Stdout, Stderr: os.Stderr}
}

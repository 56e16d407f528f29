// Command sundial is Sundial's command-line tool: log in, receive the
// project's deliveries on this machine (listen), and schedule and manage
// hooks. The commands are in package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sundial-run/sundial/cmd/sundial/cli"
)

// version is VERSION at the repository's root, stamped by make build
// (-ldflags -X main.version=...); "dev" in a build without it.
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Stdio(version))
	stop()
	os.Exit(code)
}

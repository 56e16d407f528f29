// Command gateway runs Sundial's REST API (gateway, gateway serve), applies
// the database migrations (gateway migrate) and creates projects (gateway
// admin create-project). The commands are in package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// Mozilla's root certificates, used where the system has none: the
	// image holds the binaries and nothing else.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/sundial-run/sundial/pkg/gcdefault"
	"github.com/sundial-run/sundial/services/gateway/cli"
)

func main() {
	// Go's collector defaults, with a soft memory limit under the
	// container's: request bodies are decoded in memory, and near the
	// limit the collector reclaims them rather than the kernel killing the
	// process.
	gcdefault.Apply(gcdefault.Settings{})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Stdio())
	stop()
	os.Exit(code)
}

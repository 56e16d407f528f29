package cli

import (
	"context"
	"fmt"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/services/gateway/app"
)

// resealSecrets seals every stored secret with the first key of
// SUNDIAL_SECRET_KEYS: the step of a key rotation between adding the new
// key (first) and removing the old one (docs/security.md, "Secrets at
// rest"). It fails, naming the rows and key ids, when a secret does not
// open with any key given.
func resealSecrets(ctx context.Context, args []string, env Env) error {
	if err := parseFlags(newFlagSet("reseal-secrets", env), args); err != nil {
		return err
	}
	cfg, err := app.ConfigFromEnv(env.Lookup)
	if err != nil {
		return &envconf.Error{Err: err}
	}
	counts, err := app.ResealSecrets(ctx, cfg.Database())
	fmt.Fprintf(env.Stdout, "secrets: %d sealed with the first key, %d changed meanwhile (already sealed), %d failed\n",
		counts.Sealed, counts.Changed, counts.Failed)
	if err != nil {
		return fmt.Errorf("reseal secrets: %w", err)
	}
	return nil
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/services/gateway/app"
)

// createUser gives a person a role in a project and prints their one-time
// set-password link, on SUNDIAL_PUBLIC_URL when it is set.
func createUser(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("create-user", env)
	email := fs.String("email", "", "the person's e-mail address (their sign-in name)")
	projectID := fs.String("project", "", "the project's id")
	role := fs.String("role", "", "owner, member or viewer")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	for name, v := range map[string]string{"email": *email, "project": *projectID, "role": *role} {
		if strings.TrimSpace(v) == "" {
			return usagef("create-user: --%s is required", name)
		}
	}
	cfg, err := app.ConfigFromEnv(env.Lookup)
	if err != nil {
		return &envconf.Error{Err: err}
	}
	u, err := app.CreateUser(ctx, cfg.Database(), app.NewUser{Email: *email, ProjectID: *projectID, Role: *role})
	switch {
	case errors.Is(err, app.ErrBadEmail):
		return usagef("create-user: --email: %s", err)
	case errors.Is(err, app.ErrUnknownProject):
		return usagef("create-user: --project: %s", err)
	case errors.Is(err, app.ErrBadRole):
		return usagef("create-user: --role: %s", err)
	case err != nil:
		return err
	}
	fmt.Fprintf(env.Stdout, "User %s is %s of project %s.\n", u.Email, *role, *projectID)
	if cfg.PublicURL == "" {
		fmt.Fprintf(env.Stdout, "Set-password link (one use, 24 h), relative: SUNDIAL_PUBLIC_URL is not set, put the gateway's address before it:\n  %s\n", u.SetPasswordPath)
		return nil
	}
	fmt.Fprintf(env.Stdout, "Set-password link (one use, 24 h):\n  %s%s\n", strings.TrimRight(cfg.PublicURL, "/"), u.SetPasswordPath)
	return nil
}

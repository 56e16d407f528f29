package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
)

// migrate applies pending migrations. postgres.Migrate holds an advisory
// lock, so running it twice, or from two processes at once, is safe.
func migrate(ctx context.Context, args []string, env Env) error {
	if err := parseFlags(newFlagSet("migrate", env), args); err != nil {
		return err
	}
	cfg, err := app.MigrateConfigFromEnv(env.Lookup)
	if err != nil {
		return &envconf.Error{Err: err}
	}
	applied, err := postgres.Migrate(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(env.Stdout, "migrations: up to date")
	}
	for _, v := range applied {
		fmt.Fprintf(env.Stdout, "migrations: applied %05d\n", v)
	}
	return nil
}

func admin(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 {
		return usagef("admin: missing command (create-project, create-user, set-plan, reseal-secrets)")
	}
	switch args[0] {
	case "create-project":
		return createProject(ctx, args[1:], env)
	case "create-user":
		return createUser(ctx, args[1:], env)
	case "reseal-secrets":
		return resealSecrets(ctx, args[1:], env)
	case "set-plan":
		return setPlan(ctx, args[1:], env)
	default:
		return usagef("admin: unknown command %q", args[0])
	}
}

func createProject(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("create-project", env)
	name := fs.String("name", "", "project name, 1 to 200 characters")
	domain := fs.String("domain", "", "where hooks are delivered: HOST[:PORT], no scheme or path")
	asJSON := fs.Bool("json", false, "print the credentials as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkProjectFlags(*name, *domain); err != nil {
		return err
	}
	cfg, err := app.ConfigFromEnv(env.Lookup)
	if err != nil {
		return &envconf.Error{Err: err}
	}
	creds, err := app.CreateProject(ctx, cfg.Database(), *name, *domain)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(creds)
	}
	fmt.Fprintf(env.Stdout, "Project created.\n"+
		"Project ID:  %s\n"+
		"API key:     %s\n"+
		"Signing key: %s\n"+
		"Keep both keys secret. The API key is shown only this once.\n",
		creds.ProjectID, creds.APIKey, creds.SigningKey)
	return nil
}

// checkProjectFlags reports a bad --name or --domain as a usage error,
// before anything touches the database.
func checkProjectFlags(name, domain string) error {
	if name == "" {
		return usagef("create-project: --name is required")
	}
	if domain == "" {
		return usagef("create-project: --domain is required")
	}
	if _, err := project.ValidateName(name); err != nil {
		return flagError(err)
	}
	if _, err := project.ValidateDomain(domain); err != nil {
		return flagError(err)
	}
	return nil
}

func flagError(err error) error {
	var invalid *project.InvalidError
	if errors.As(err, &invalid) {
		return usagef("create-project: --%s: %s", invalid.Field, invalid.Message)
	}
	return err
}

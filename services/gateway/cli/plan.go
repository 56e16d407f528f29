package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Bounds of the settings set-plan changes. The rate limit and burst are
// the database's own bounds (and quota.SetRateLimit's); the hard cap's upper
// bound guards against a typo that would make the quota meaningless.
const (
	minHardCapPercent = 100
	maxHardCapPercent = 10_000
	maxRatePerSecond  = 100_000
	maxRateBurst      = 1_000_000
)

// planChange is what set-plan was asked to change: nil is a flag not given,
// whose setting stays as it is.
type planChange struct {
	quota            *int64
	hardCapPercent   *int
	ratePerSecond    *int
	rateBurst        *int
	maxRetentionDays *int
}

func (c planChange) changesPlan() bool { return c.quota != nil || c.hardCapPercent != nil }

func (c planChange) changesRateLimit() bool { return c.ratePerSecond != nil || c.rateBurst != nil }

// planSettings is a project's plan and rate limit, as set-plan prints them.
type planSettings struct {
	ProjectID          string `json:"projectId"`
	Quota              int64  `json:"quota"`
	HardCapPercent     int32  `json:"hardCapPercent"`
	RateLimitPerSecond int    `json:"rateLimitPerSecond"`
	RateLimitBurst     int    `json:"rateLimitBurst"`
	MaxRetentionDays   int    `json:"maxRetentionDays"`
}

func setPlan(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("set-plan", env)
	projectID := fs.String("project", "", "the project's id")
	quotaHooks := fs.Int64("quota", 0, "hooks per billing period, at least 1")
	hardCapPercent := fs.Int("hard-cap-percent", 0, "hard cap as a percentage of the quota, 100 to 10000")
	ratePerSecond := fs.Int("rate-limit", 0, "requests per second per API key, 1 to 100000")
	rateBurst := fs.Int("rate-burst", 0, "the most requests an API key may make at once, 1 to 1000000 (with --rate-limit, at least as many)")
	maxRetentionDays := fs.Int("max-retention-days", 0, "the most days a project may keep its finished hooks (its retentionDays' bound), 1 to 3650")
	asJSON := fs.Bool("json", false, "print the resulting plan as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var change planChange // only the flags given
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "quota":
			change.quota = quotaHooks
		case "hard-cap-percent":
			change.hardCapPercent = hardCapPercent
		case "rate-limit":
			change.ratePerSecond = ratePerSecond
		case "rate-burst":
			change.rateBurst = rateBurst
		case "max-retention-days":
			change.maxRetentionDays = maxRetentionDays
		}
	})
	id, err := checkPlanFlags(*projectID, change)
	if err != nil {
		return err
	}
	cfg, err := app.ConfigFromEnv(env.Lookup)
	if err != nil {
		return &envconf.Error{Err: err}
	}
	settings, err := changePlan(ctx, cfg.DatabaseURL, id, change)
	if errors.Is(err, postgres.ErrNotFound) {
		return fmt.Errorf("set-plan: no such project %s", id)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(settings)
	}
	fmt.Fprintf(env.Stdout, "Plan updated.\n"+
		"Project ID:  %s\n"+
		"Quota:       %d hooks per billing period\n"+
		"Hard cap:    %d%% of the quota (%d hooks)\n"+
		"Rate limit:  %d requests per second per API key\n"+
		"Burst:       %d requests\n"+
		"Retention:   at most %d days\n",
		settings.ProjectID, settings.Quota,
		settings.HardCapPercent, quota.HardCap(settings.Quota, settings.HardCapPercent),
		settings.RateLimitPerSecond, settings.RateLimitBurst, settings.MaxRetentionDays)
	return nil
}

// checkPlanFlags reports a missing, malformed or out-of-range flag as a
// usage error, before anything touches the database.
func checkPlanFlags(projectID string, change planChange) (uuid.UUID, error) {
	if projectID == "" {
		return uuid.Nil, usagef("set-plan: --project is required")
	}
	id, err := uuid.Parse(projectID)
	if err != nil {
		return uuid.Nil, usagef("set-plan: --project: %q is not a project id (a UUID)", projectID)
	}
	switch {
	case !change.changesPlan() && !change.changesRateLimit() && change.maxRetentionDays == nil:
		return uuid.Nil, usagef("set-plan: nothing to change: give at least one of --quota, --hard-cap-percent, --rate-limit, --rate-burst, --max-retention-days")
	case change.maxRetentionDays != nil && (*change.maxRetentionDays < project.MinRetentionDays || *change.maxRetentionDays > project.MaxRetentionDays):
		return uuid.Nil, usagef("set-plan: --max-retention-days: must be %d to %d, got %d", project.MinRetentionDays, project.MaxRetentionDays, *change.maxRetentionDays)
	case change.quota != nil && *change.quota < 1:
		return uuid.Nil, usagef("set-plan: --quota: must be at least 1, got %d", *change.quota)
	case change.hardCapPercent != nil && (*change.hardCapPercent < minHardCapPercent || *change.hardCapPercent > maxHardCapPercent):
		return uuid.Nil, usagef("set-plan: --hard-cap-percent: must be %d to %d, got %d", minHardCapPercent, maxHardCapPercent, *change.hardCapPercent)
	case change.ratePerSecond != nil && (*change.ratePerSecond < 1 || *change.ratePerSecond > maxRatePerSecond):
		return uuid.Nil, usagef("set-plan: --rate-limit: must be 1 to %d requests per second, got %d", maxRatePerSecond, *change.ratePerSecond)
	case change.rateBurst != nil && (*change.rateBurst < 1 || *change.rateBurst > maxRateBurst):
		return uuid.Nil, usagef("set-plan: --rate-burst: must be 1 to %d requests, got %d", maxRateBurst, *change.rateBurst)
	case change.ratePerSecond != nil && change.rateBurst != nil && *change.rateBurst < *change.ratePerSecond:
		return uuid.Nil, usagef("set-plan: --rate-burst: must be at least --rate-limit (%d), got %d", *change.ratePerSecond, *change.rateBurst)
	}
	return id, nil
}

// changePlan merges change into the project's plan and rate limit and
// writes the result in one transaction, holding the project's row so that
// a concurrent change of another setting is not undone. An unknown project
// is postgres.ErrNotFound.
func changePlan(ctx context.Context, databaseURL string, projectID uuid.UUID, change planChange) (planSettings, error) {
	pool, err := postgres.Connect(ctx, databaseURL, 2)
	if err != nil {
		return planSettings{}, err
	}
	defer pool.Close()
	var settings planSettings
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		current, err := q.LockProjectPlan(ctx, projectID)
		if err != nil {
			return fmt.Errorf("read plan: %w", postgres.Translate(err))
		}
		plan := project.Plan{Quota: current.PlanQuota, HardCapPercent: current.PlanHardCapPercent}
		if change.quota != nil {
			plan.Quota = *change.quota
		}
		if change.hardCapPercent != nil {
			plan.HardCapPercent = int32(*change.hardCapPercent) // checked: 100 to 10000
		}
		rate := quota.RateLimit{PerSecond: int(current.RateLimitPerSecond), Burst: int(current.RateLimitBurst)}
		if change.ratePerSecond != nil {
			rate.PerSecond = *change.ratePerSecond
		}
		if change.rateBurst != nil {
			rate.Burst = *change.rateBurst
		}
		if change.changesPlan() {
			if err := project.SetPlan(ctx, q, projectID, plan); err != nil {
				return err
			}
		}
		if change.changesRateLimit() {
			if err := quota.SetRateLimit(ctx, q, projectID, rate); err != nil {
				return err
			}
		}
		retention := int(current.PlanMaxRetentionDays)
		if change.maxRetentionDays != nil {
			retention = *change.maxRetentionDays
			if err := project.SetMaxRetentionDays(ctx, q, projectID, retention); err != nil {
				return err
			}
		}
		settings = planSettings{
			ProjectID:          projectID.String(),
			Quota:              plan.Quota,
			HardCapPercent:     plan.HardCapPercent,
			RateLimitPerSecond: rate.PerSecond,
			RateLimitBurst:     rate.Burst,
			MaxRetentionDays:   retention,
		}
		return nil
	})
	if err != nil {
		return planSettings{}, fmt.Errorf("set plan: %w", err)
	}
	return settings, nil
}

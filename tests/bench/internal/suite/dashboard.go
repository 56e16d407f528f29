package suite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DashboardSeed describes how the dashboard scenario's project was filled.
type DashboardSeed struct {
	Hooks    int `json:"hooks"`
	Attempts int `json:"attempts"`
	// Minutes counts the rows of delivery_minutes, every step length.
	Minutes int `json:"minutes"`
	// Triggers says whether the row triggers ran (see BacklogLoad).
	Triggers bool `json:"triggers"`
	// The stages' times; Seconds is all of it.
	HooksSeconds    float64 `json:"hooksSeconds"`
	AttemptsSeconds float64 `json:"attemptsSeconds"`
	MinutesSeconds  float64 `json:"minutesSeconds"`
	VacuumSeconds   float64 `json:"vacuumSeconds"`
	Seconds         float64 `json:"seconds"`
}

// SeedDashboard fills project's 7 days: hooks hooks, their attempts and
// every minute's delivery figures, each stage one INSERT ... SELECT of
// admin.sql (seed-dashboard-*), then VACUUM (ANALYZE). The row triggers
// are skipped when the role may, as for the backlog.
func SeedDashboard(ctx context.Context, dbURL, projectID, domain string, hooks int) (DashboardSeed, error) {
	start := time.Now()
	seed := DashboardSeed{}
	project, err := uuid.Parse(projectID)
	if err != nil {
		return seed, fmt.Errorf("project id: %w", err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return seed, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, skipErr := conn.Exec(ctx, statement("skip-triggers", ""))
	seed.Triggers = skipErr != nil
	for _, stage := range []struct {
		name    string
		args    []any
		rows    *int
		seconds *float64
	}{
		{"seed-dashboard-hooks", []any{project, domain, hooks}, &seed.Hooks, &seed.HooksSeconds},
		{"seed-dashboard-attempts", []any{project}, &seed.Attempts, &seed.AttemptsSeconds},
		{"seed-dashboard-minutes", []any{project}, nil, &seed.MinutesSeconds},
		{"vacuum-dashboard", nil, nil, &seed.VacuumSeconds},
	} {
		t := time.Now()
		tag, err := conn.Exec(ctx, statement(stage.name, ""), stage.args...)
		if err != nil {
			return seed, fmt.Errorf("%s: %w", stage.name, err)
		}
		if stage.rows != nil {
			*stage.rows = int(tag.RowsAffected())
		}
		*stage.seconds = since(t)
	}
	if err := conn.QueryRow(ctx, statement("count-dashboard-figures", ""), project).Scan(&seed.Minutes); err != nil {
		return seed, fmt.Errorf("count figures: %w", err)
	}
	if seed.Hooks != hooks {
		return seed, fmt.Errorf("seed dashboard: %d hooks inserted, want %d", seed.Hooks, hooks)
	}
	seed.Seconds = since(start)
	return seed, nil
}

// HookWithAttempts is a hook of the project with 3 attempts.
func HookWithAttempts(ctx context.Context, dbURL, projectID string) (uuid.UUID, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return uuid.Nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var id uuid.UUID
	if err := conn.QueryRow(ctx, statement("dashboard-hook-with-attempts", ""), projectID).Scan(&id); err != nil {
		return uuid.Nil, fmt.Errorf("hook with attempts: %w", err)
	}
	return id, nil
}

// CreateUser gives a new dashboard user role in the suite's project with
// `gateway admin create-user`, as an operator would, and returns the path
// of their set-password link (/dashboard/set-password?token=...).
func (s *Suite) CreateUser(ctx context.Context, email, role string) (string, error) {
	out, err := s.gatewayCommand(ctx, "admin", "create-user", "--email", email, "--project", s.Project.ProjectID, "--role", role)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(out)) {
		if i := strings.Index(line, "/dashboard/set-password?"); i >= 0 {
			return strings.TrimSpace(line[i:]), nil
		}
	}
	return "", errors.New("create-user printed no set-password link")
}

package suite

import (
	"context"
	_ "embed"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

//go:embed admin.sql
var adminSQL string

// statement returns the named statement of admin.sql, with {{db}} replaced
// by db quoted as an identifier.
func statement(name, db string) string { return NamedStatement(adminSQL, name, db) }

// NamedStatement returns the statement that follows "-- name: <name>" in
// file (up to the next such line), with {{db}} replaced by db quoted as an
// identifier: an identifier cannot be a query parameter.
func NamedStatement(file, name, db string) string {
	marker := "-- name: " + name + "\n"
	i := strings.Index(file, marker)
	if i < 0 {
		panic("no statement " + name)
	}
	stmt := file[i+len(marker):]
	if j := strings.Index(stmt, "\n-- name: "); j >= 0 {
		stmt = stmt[:j]
	}
	return strings.ReplaceAll(strings.TrimSpace(stmt), "{{db}}", pgx.Identifier{db}.Sanitize())
}

// withDatabase is url with its database name replaced.
func withDatabase(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("database url: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func execOn(ctx context.Context, dbURL, stmt string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, stmt)
	return err
}

// CreateDatabase makes an empty database named after the scenario on the
// server of adminURL and returns its name and URL.
func CreateDatabase(ctx context.Context, adminURL, scenario string) (string, string, error) {
	name := "sundial_bench_" + strings.ReplaceAll(scenario, "-", "_") + "_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	if err := execOn(ctx, adminURL, statement("create-database", name)); err != nil {
		return "", "", fmt.Errorf("create database %s: %w", name, err)
	}
	dbURL, err := withDatabase(adminURL, name)
	return name, dbURL, err
}

// DropDatabase drops a database made by CreateDatabase.
func DropDatabase(ctx context.Context, adminURL, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := execOn(ctx, adminURL, statement("drop-database", name)); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// Checkpoint writes back everything a backlog load left dirty, so that the
// write-back does not fall in the measurement (admin.sql). Only a superuser
// or a member of pg_checkpoint may.
func Checkpoint(ctx context.Context, adminURL string) error {
	if err := execOn(ctx, adminURL, statement("checkpoint", "")); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// DBStats are cumulative counters of the benchmark's database.
type DBStats struct {
	Commits   int64 `json:"commits"`
	Rollbacks int64 `json:"rollbacks"`
	Inserted  int64 `json:"rowsInserted"`
	Updated   int64 `json:"rowsUpdated"`
	Fetched   int64 `json:"rowsFetched"`
}

// Sub is s minus an earlier reading.
func (s DBStats) Sub(o DBStats) DBStats {
	return DBStats{s.Commits - o.Commits, s.Rollbacks - o.Rollbacks, s.Inserted - o.Inserted, s.Updated - o.Updated, s.Fetched - o.Fetched}
}

// DatabaseStats reads the counters. PostgreSQL publishes a backend's
// counters when it has been idle for a moment or when it exits, so a
// reading taken while services run lags by up to a second or so; once they
// are stopped, it waits for their connections to close.
func (s *Suite) DatabaseStats(ctx context.Context) (DBStats, error) {
	return ReadDBStats(ctx, s.DBURL, s.servicesRunning)
}

// ReadDBStats reads the counters of the database of dbURL; running says
// whether its clients still run (see Suite.DatabaseStats).
func ReadDBStats(ctx context.Context, dbURL string, running func() bool) (DBStats, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return DBStats{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// Wait (briefly) for stopped services' connections to be gone, so that
	// their last counters are in.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var others int
		if err := conn.QueryRow(ctx, statement("other-backends", "")).Scan(&others); err != nil || others == 0 || running() {
			break
		}
	}
	var st DBStats
	err = conn.QueryRow(ctx, statement("database-stats", "")).Scan(&st.Commits, &st.Rollbacks, &st.Inserted, &st.Updated, &st.Fetched)
	return st, err
}

// servicesRunning says whether any service process is still running.
func (s *Suite) servicesRunning() bool {
	for _, p := range s.Services {
		if exited, _ := p.Exited(); !exited {
			return true
		}
	}
	return false
}

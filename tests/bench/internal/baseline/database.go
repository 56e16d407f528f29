package baseline

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
func statement(name, db string) string {
	marker := "-- name: " + name + "\n"
	i := strings.Index(adminSQL, marker)
	if i < 0 {
		panic("admin.sql has no statement " + name)
	}
	stmt := adminSQL[i+len(marker):]
	if j := strings.Index(stmt, "\n-- name: "); j >= 0 {
		stmt = stmt[:j]
	}
	return strings.ReplaceAll(strings.TrimSpace(stmt), "{{db}}", pgx.Identifier{db}.Sanitize())
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

// createDatabase makes an empty database on the server of adminURL and
// returns its name and URL.
func createDatabase(ctx context.Context, adminURL string) (string, string, error) {
	name := "sundial_bench_river_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	if err := execOn(ctx, adminURL, statement("create-database", name)); err != nil {
		return "", "", fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", "", fmt.Errorf("database url: %w", err)
	}
	u.Path = "/" + name
	return name, u.String(), nil
}

func dropDatabase(ctx context.Context, adminURL, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := execOn(ctx, adminURL, statement("drop-database", name)); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

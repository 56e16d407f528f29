package pgtest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Explain runs query under EXPLAIN (ANALYZE, BUFFERS) in a transaction it
// rolls back, and returns the rows the statement produced and the shared
// buffers it touched. Cost tests bound the buffers: unlike times, they do
// not move with the machine's load. args may start with a pgx
// QueryExecMode (QueryExecModeExec plans with the actual values).
func Explain(t testing.TB, pool *pgxpool.Pool, query string, args ...any) (rows, buffers float64) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		t.Fatalf("pgtest: explain: begin: %v", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var raw []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+query, args...).Scan(&raw); err != nil {
		t.Fatalf("pgtest: explain: %v", err)
	}
	var out []struct {
		Plan struct {
			Rows float64 `json:"Actual Rows"`
			Hit  float64 `json:"Shared Hit Blocks"`
			Read float64 `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("pgtest: explain: want one plan, got %d (%v)", len(out), err)
	}
	return out[0].Plan.Rows, out[0].Plan.Hit + out[0].Plan.Read
}

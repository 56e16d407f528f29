package pgtest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Cost is what one run of a statement did, read off EXPLAIN (ANALYZE,
// BUFFERS). Cost tests bound it per row: unlike times, it does not move
// with the machine's load.
type Cost struct {
	// Rows is what the statement produced.
	Rows float64
	// Buffers is the shared buffers it touched.
	Buffers float64
	// Handled is the rows every node of its plan produced or filtered
	// out, over all of the node's loops. A join that compares every pair
	// of two sets makes it grow with their product even where the
	// buffers do not move (two CTEs joined in memory).
	Handled float64
}

// planNode is a node of EXPLAIN's JSON. Its actual rows and rows removed
// are averages over its loops.
type planNode struct {
	Rows          float64    `json:"Actual Rows"`
	Loops         float64    `json:"Actual Loops"`
	Hit           float64    `json:"Shared Hit Blocks"`
	Read          float64    `json:"Shared Read Blocks"`
	Removed       float64    `json:"Rows Removed by Filter"`
	RemovedByJoin float64    `json:"Rows Removed by Join Filter"`
	Plans         []planNode `json:"Plans"`
}

func (n planNode) handled() float64 {
	h := (n.Rows + n.Removed + n.RemovedByJoin) * n.Loops
	for _, c := range n.Plans {
		h += c.handled()
	}
	return h
}

// Measure runs query under EXPLAIN (ANALYZE, BUFFERS) in a transaction it
// rolls back and returns its Cost. args may start with a pgx
// QueryExecMode (QueryExecModeExec plans with the actual values).
func Measure(t testing.TB, pool *pgxpool.Pool, query string, args ...any) Cost {
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
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("pgtest: explain: want one plan, got %d (%v)", len(out), err)
	}
	p := out[0].Plan
	return Cost{Rows: p.Rows, Buffers: p.Hit + p.Read, Handled: p.handled()}
}

// Explain is Measure's rows and buffers.
func Explain(t testing.TB, pool *pgxpool.Pool, query string, args ...any) (rows, buffers float64) {
	t.Helper()
	c := Measure(t, pool, query, args...)
	return c.Rows, c.Buffers
}

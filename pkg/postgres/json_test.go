package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
)

// serverURL is the test server (withpg sets it), no migrated database
// needed: the statements below read no table. testkit/pgtest, which says
// the same, depends on this module, so it cannot be imported here.
func serverURL() string {
	for _, k := range []string{"SUNDIAL_TEST_DATABASE_URL", "SUNDIAL_DATABASE_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// A json or jsonb value read into a json.RawMessage is the server's text,
// a copy that later rows do not overwrite; NULL is nil; other targets are
// still unmarshalled.
func TestJSONIsReadAsTheServerWroteIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := postgres.Connect(ctx, serverURL(), 2)
	require.NoError(t, err)
	defer pool.Close()

	rows, err := pool.Query(ctx, `SELECT v::jsonb, v::json FROM (VALUES
		('{"b": 1,  "a": ["x\u00e9", null]}'), ('null'), ('"a \"quoted\" \\ string"'), (NULL), (repeat('[', 20) || repeat(']', 20))
	) AS t(v)`)
	require.NoError(t, err)
	var got [][2]json.RawMessage
	for rows.Next() {
		var b, j json.RawMessage
		require.NoError(t, rows.Scan(&b, &j))
		got = append(got, [2]json.RawMessage{b, j})
	}
	require.NoError(t, rows.Err())
	want := [][2]string{
		{`{"a": ["xé", null], "b": 1}`, `{"b": 1,  "a": ["x\u00e9", null]}`},
		{`null`, `null`},
		{`"a \"quoted\" \\ string"`, `"a \"quoted\" \\ string"`},
		{"", ""},
		{`[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`, `[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`},
	}
	require.Len(t, got, len(want))
	for i, w := range want {
		require.Equal(t, w[0], string(got[i][0]), "row %d, jsonb", i)
		require.Equal(t, w[1], string(got[i][1]), "row %d, json", i)
	}
	require.Nil(t, got[3][0], "NULL jsonb")
	require.Nil(t, got[3][1], "NULL json")

	// Enough rows that the connection's read buffer is reused under them.
	many, err := pool.Query(ctx, `SELECT jsonb_build_object('n', g) FROM generate_series(1, 5000) AS g`)
	require.NoError(t, err)
	var kept []json.RawMessage
	for many.Next() {
		var v json.RawMessage
		require.NoError(t, many.Scan(&v))
		kept = append(kept, v)
	}
	require.NoError(t, many.Err())
	require.Len(t, kept, 5000)
	for i, v := range kept {
		require.Equal(t, fmt.Sprintf(`{"n": %d}`, i+1), string(v))
	}

	var doc struct {
		A []any `json:"a"`
		B int   `json:"b"`
	}
	require.NoError(t, pool.QueryRow(ctx, `SELECT '{"b": 7, "a": [1]}'::jsonb`).Scan(&doc))
	require.Equal(t, 7, doc.B)
	require.Equal(t, []any{1.0}, doc.A)

	var back json.RawMessage
	in := json.RawMessage(`{"k": [1, 2.5, "three"]}`)
	require.NoError(t, pool.QueryRow(ctx, `SELECT $1::jsonb`, in).Scan(&back))
	require.JSONEq(t, string(in), string(back))
}

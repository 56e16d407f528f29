package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/testkit/pgtest"
)

// TestStoredSizeIsWhatPostgreSQLReturns compares storedSize with the
// length of PostgreSQL's own jsonb text for data whose stored form does not
// shrink (no duplicate keys, no escapes that decode shorter), where the
// bound is exact, and checks that it is a bound for data that does.
func TestStoredSizeIsWhatPostgreSQLReturns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDB(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	exact := []string{
		`{}`,
		`{"a":1}`,
		`{"b":1e3,"a":[1.50,-0.0,1E-3,0.00012e2,12e-5,-5e0,100e-1,0,-0,0.0e-2,1e+2,-12.5E1]}`,
		`{"s":"a,b:c\"d\\e","n":null,"t":true,"f":false,"o":{"x":[[],{}]}}`,
		`{"x":1e300}`,
		`{"x":123456789012345678901234567890.123456789e-40}`,
		`{"x":"héllo, 世界"}`,
		`{"a":[0,0,0,0,0,0,0,0,0,0]}`,
	}
	for _, data := range exact {
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT octet_length($1::jsonb::text)`, data).Scan(&n))
		require.Equal(t, n, storedSize(compact(t, data)), data)
	}
	shrinking := []string{`{"a":1,"a":2}`, `{"x":"\u00e9\/"}`}
	for _, data := range shrinking {
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT octet_length($1::jsonb::text)`, data).Scan(&n))
		require.GreaterOrEqual(t, storedSize(compact(t, data)), n, data)
	}
}

func TestStoredSizeOfHugeExponents(t *testing.T) {
	t.Parallel()
	require.Equal(t, len(`{"x": `)+131072+1, storedSize([]byte(`{"x":1e131071}`)))
	require.Greater(t, storedSize([]byte(`{"x":1e99999999999999999999}`)), 1<<40)
	require.Greater(t, storedSize([]byte(`{"x":[1e1073741824,1e1073741824,1e1073741824]}`)), 3<<30, "no overflow")
}

func compact(t *testing.T, data string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Compact(&buf, []byte(data)))
	return buf.Bytes()
}

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
)

// A database that refuses connections is unavailable; a statement that
// fails, or a row that is missing, is not.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pgx.Connect(ctx, "postgres://postgres@"+closed+"/sundial?sslmode=disable")
	require.Error(t, err)
	require.True(t, postgres.Unavailable(fmt.Errorf("look up: %w", err)), "connection refused: %v", err)

	require.True(t, postgres.Unavailable(&pgconn.PgError{Code: "57P01"}), "admin shutdown")
	require.True(t, postgres.Unavailable(&pgconn.PgError{Code: "08006"}), "connection failure")
	require.True(t, postgres.Unavailable(&pgconn.PgError{Code: "57P03"}), "cannot connect now")
	require.True(t, postgres.Unavailable(&pgconn.PgError{Code: "25006"}), "read-only transaction: a write sent to a standby")
	require.True(t, postgres.Unavailable(fmt.Errorf("commit: %w", pgconn.ErrConnClosed)), "connection closed under a transaction")
	require.False(t, postgres.Unavailable(&pgconn.PgError{Code: "23505"}), "unique violation")
	require.False(t, postgres.Unavailable(postgres.Translate(pgx.ErrNoRows)))
	require.False(t, postgres.Unavailable(errors.New("boom")))
	require.False(t, postgres.Unavailable(nil))
}

// A transaction rolled back for colliding with another (deadlock,
// serialization failure) is "conflicted": the gateway answers it 503 with
// a short Retry-After. No other error is, and none of these is
// "unavailable".
func TestConflicted(t *testing.T) {
	t.Parallel()
	require.True(t, postgres.Conflicted(fmt.Errorf("resume: %w", &pgconn.PgError{Code: "40P01"})), "deadlock")
	require.True(t, postgres.Conflicted(&pgconn.PgError{Code: "40001"}), "serialization failure")
	require.False(t, postgres.Conflicted(&pgconn.PgError{Code: "23505"}), "unique violation")
	require.False(t, postgres.Conflicted(&pgconn.PgError{Code: "57P01"}), "admin shutdown")
	require.False(t, postgres.Conflicted(errors.New("boom")))
	require.False(t, postgres.Conflicted(nil))
	require.False(t, postgres.Unavailable(&pgconn.PgError{Code: "40P01"}))
}

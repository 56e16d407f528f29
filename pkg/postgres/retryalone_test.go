package postgres_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
)

// Refused data and deadlocks send a batch item by item; a database that
// is down, or any other error, does not.
func TestRetryAlone(t *testing.T) {
	t.Parallel()
	require.True(t, postgres.RetryAlone(fmt.Errorf("batch: %w", &pgconn.PgError{Code: "22P02"})), "invalid text")
	require.True(t, postgres.RetryAlone(&pgconn.PgError{Code: "23505"}), "unique violation")
	require.True(t, postgres.RetryAlone(&pgconn.PgError{Code: "40P01"}), "deadlock")
	require.False(t, postgres.RetryAlone(&pgconn.PgError{Code: "40001"}), "serialization failure")
	require.False(t, postgres.RetryAlone(&pgconn.PgError{Code: "57P01"}), "admin shutdown")
	require.False(t, postgres.RetryAlone(errors.New("boom")))
	require.False(t, postgres.RetryAlone(nil))

	require.True(t, postgres.Refused(&pgconn.PgError{Code: "23503"}), "foreign key violation")
	require.False(t, postgres.Refused(&pgconn.PgError{Code: "40P01"}), "a deadlock is not the data's fault")
}

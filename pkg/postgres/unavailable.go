package postgres

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says that the database could not be
// reached or dropped the connection (refused, reset, shutting down,
// starting up), or takes no writes (a standby, before a failover promotes
// it), as opposed to a statement that failed. Callers answer the first
// with "try again later" (the gateway's 503 with Retry-After) and the
// second as a fault of their own.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08 is connection exception; 57P01-57P03 are the server
		// shutting down (admin, crash) or not accepting connections yet;
		// 25006 (read_only_sql_transaction) is a write sent to a standby,
		// which a URL without target_session_attrs=read-write can reach.
		return strings.HasPrefix(pgErr.Code, "08") ||
			pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03" ||
			pgErr.Code == "25006"
	}
	// A connection the server dropped under a transaction fails the
	// transaction's later statements (its commit, its rollback) with
	// ErrConnClosed, which wraps no network error.
	if errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	// A connection cut mid-conversation surfaces as an unexpected EOF.
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// Conflicted reports whether PostgreSQL rolled err's transaction back for
// colliding with another one (class 40: a deadlock, 40P01, or a
// serialization failure, 40001): nothing of it was written, and the same
// request sent again may pass. Callers answer it as "try again soon" (the
// gateway's 503 with a short Retry-After), not as a fault of their own.
func Conflicted(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

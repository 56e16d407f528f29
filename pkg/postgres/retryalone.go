package postgres

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Refused reports database errors that retrying cannot fix: data the
// database refuses (class 22) or a violated constraint (class 23).
func Refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23"))
}

// RetryAlone reports whether a batch statement's error may be one item's
// fault (Refused) or the batch's shape: a deadlock (40P01) with another
// batch over the same rows, which can lock them in another order when its
// plan joins them differently. Applied one by one, the items cannot fail
// each other and lock one row each, so a caller that gets true applies
// the batch item by item; any other error fails the batch as a whole.
func RetryAlone(err error) bool {
	var pgErr *pgconn.PgError
	return Refused(err) || (errors.As(err, &pgErr) && pgErr.Code == "40P01")
}

// Package dbdump reads a whole Sundial database as text, the way a stolen
// copy or a backup would show it, so that tests can check that no secret
// is stored in plain text. Its queries are compiled by sqlc from dump.sql.
package dbdump

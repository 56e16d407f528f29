// Package migrations holds Sundial's database schema: the only place it is
// defined. The files are goose migrations, embedded so that the gateway's
// `migrate` command and the test kits apply exactly what sqlc compiles against.
package migrations

import "embed"

// FS holds the zero-padded, sequential goose SQL files of this folder.
//
//go:embed *.sql
var FS embed.FS

package baseline

import (
	_ "embed"

	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

//go:embed admin.sql
var adminSQL string

// statement returns the named statement of admin.sql.
func statement(name string) string { return suite.NamedStatement(adminSQL, name, "") }

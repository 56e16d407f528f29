// Package configdoc writes the configuration tables of docs/configuration.md
// (File) from the services' Config structs (each field's doc comment and env
// tag, each loader's defaults), and reads them back, so that a test can hold
// them to the loaders.
package configdoc

import (
	"fmt"
	"strings"
)

// Row is one row of a configuration table: a table whose first columns are
// "variable" and "default", with an optional "used by" column.
type Row struct {
	// Section is the heading the table sits under, without its #s.
	Section string
	// Variables are the backquoted names of the first cell ("`A`, `B`").
	Variables []string
	// Default is the second cell as written.
	Default string
	// UsedBy is the "used by" cell, empty when the table has none.
	UsedBy string
	// Line is the row's line number, for messages.
	Line int
}

// Unset is what a default cell says when the variable has no value.
const Unset = "unset"

// Required is what a default cell says when the variable has no default
// and the service refuses to start without it.
const Required = "required"

// Rows returns the rows of every configuration table in markdown.
func Rows(markdown string) []Row {
	var rows []Row
	var section string
	var header []string // columns of the table being read; nil outside one
	for i, line := range strings.Split(markdown, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "#"):
			section = strings.TrimSpace(strings.TrimLeft(line, "#"))
			header = nil
		case !strings.HasPrefix(line, "|"):
			header = nil
		case header == nil:
			header = cells(line)
		case strings.HasPrefix(line, "|-") || strings.HasPrefix(line, "| -"):
			// the separator under the header
		default:
			if row, ok := configRow(header, cells(line)); ok {
				row.Section, row.Line = section, i+1
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// configRow turns the cells of a table row into a Row when the table is a
// configuration table.
func configRow(header, c []string) (Row, bool) {
	if len(header) < 2 || header[0] != "variable" || header[1] != "default" || len(c) < 2 {
		return Row{}, false
	}
	row := Row{Variables: names(c[0]), Default: c[1]}
	if len(header) > 2 && header[2] == "used by" && len(c) > 2 {
		row.UsedBy = c[2]
	}
	return row, true
}

// Value is the value a default cell gives: a single backquoted value, or
// no value (unset true) for Unset. Any other cell is an error: a test could
// not check it against the code.
func (r Row) Value() (value string, unset bool, err error) {
	d := r.Default
	if d == Unset || d == Required {
		return "", true, nil
	}
	if len(d) >= 2 && strings.HasPrefix(d, "`") && strings.HasSuffix(d, "`") && strings.Count(d, "`") == 2 {
		return d[1 : len(d)-1], false, nil
	}
	return "", false, fmt.Errorf("line %d: default %q of %v: want one `value` or %q", r.Line, d, r.Variables, Unset)
}

// Required reports whether the row's variable has no default and must be set.
func (r Row) Required() bool { return r.Default == Required }

// UsedByService reports whether a row of a table with a "used by" column
// applies to service ("all", or a comma-separated list naming it).
func (r Row) UsedByService(service string) bool {
	for _, s := range strings.Split(r.UsedBy, ",") {
		if s = strings.TrimSpace(s); s == "all" || s == service {
			return true
		}
	}
	return false
}

func cells(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	parts := strings.Split(line, "|")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}

// names are the backquoted words of a cell.
func names(cell string) []string {
	var out []string
	for i, part := range strings.Split(cell, "`") {
		if i%2 == 1 {
			out = append(out, part)
		}
	}
	return out
}

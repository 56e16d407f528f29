package ownership_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The section of docPath whose table the tests hold the SQL to.
const (
	docPath = "docs/architecture.md"
	section = "## Who writes which table"
)

// TestSectionCoversEveryTable: every table the migrations create has one
// row in the section, and every row names such a table.
func TestSectionCoversEveryTable(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	tables := migrationTables(t, root)
	rows := docRows(t, root, serviceNames(t, root))

	var problems []string
	for _, table := range sortedKeys(tables) {
		if _, ok := rows[table]; !ok {
			problems = append(problems, fmt.Sprintf("table %s (migrations/) has no row", table))
		}
	}
	for _, table := range sortedKeys(rows) {
		if !tables[table] {
			problems = append(problems, fmt.Sprintf("row %s: no migration creates that table", table))
		}
	}
	require.Empty(t, problems, "%s, %q:\n%s", docPath, section, strings.Join(problems, "\n"))
}

// TestEveryWriteIsListed: a service that writes a table (INSERT INTO,
// UPDATE, DELETE FROM, MERGE INTO, TRUNCATE, a :copyfrom query) is the
// table's owner or one of its other writers in the section.
func TestEveryWriteIsListed(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	services := serviceNames(t, root)
	tables := migrationTables(t, root)
	rows := docRows(t, root, services)

	var problems []string
	for _, svc := range services {
		byTable := serviceWrites(t, root, svc)
		for _, table := range sortedKeys(byTable) {
			first := byTable[table][0]
			switch r, ok := rows[table]; {
			case !tables[table]:
				problems = append(problems, fmt.Sprintf("%s: %s writes %s, which no migration creates", first, svc, table))
			case !ok:
				// TestSectionCoversEveryTable reports the missing row.
			case r.owner != svc && !r.others[svc]:
				problems = append(problems, fmt.Sprintf(
					"%s: %s writes %s, which the section lists neither as its owner (%s) nor as another writer "+
						"(add \"**%s**: <why>\" to the row, or stop the write)",
					strings.Join(places(byTable[table]), ", "), svc, table, r.owner, svc))
			}
		}
	}
	require.Empty(t, problems, "%s, %q:\n%s", docPath, section, strings.Join(problems, "\n"))
}

// TestEveryListedWriterWrites: the owner and every other writer the section
// names for a table write it in their SQL, so that a writer that stopped
// writing leaves the section.
func TestEveryListedWriterWrites(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	services := serviceNames(t, root)
	rows := docRows(t, root, services)
	writes := map[string]map[string][]place{}
	for _, svc := range services {
		writes[svc] = serviceWrites(t, root, svc)
	}

	var problems []string
	for _, table := range sortedKeys(rows) {
		r := rows[table]
		if len(writes[r.owner][table]) == 0 {
			problems = append(problems, fmt.Sprintf("row %s (line %d): owner %s does not write it", table, r.line, r.owner))
		}
		for _, svc := range sortedKeys(r.others) {
			if len(writes[svc][table]) == 0 {
				problems = append(problems, fmt.Sprintf("row %s (line %d): %s is listed as another writer but does not write it",
					table, r.line, svc))
			}
		}
	}
	require.Empty(t, problems, "%s, %q:\n%s", docPath, section, strings.Join(problems, "\n"))
}

// TestWritesOf pins what counts as a write.
func TestWritesOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, kind, sql string
		want            []string
	}{
		{"insert", "exec", `INSERT INTO hooks (id) VALUES ($1)`, []string{"INSERT hooks"}},
		{"upsert is one write", "exec",
			`INSERT INTO usage_periods AS u (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET a = u.a + 1`,
			[]string{"INSERT usage_periods"}},
		{"update and delete", "exec", "UPDATE ONLY public.\"hooks\" SET a = 1;\ndelete from hook_attempts where true",
			[]string{"UPDATE hooks", "DELETE hook_attempts"}},
		{"writes in CTEs", "one",
			`WITH gone AS (DELETE FROM hooks RETURNING id), c AS (UPDATE usage_periods SET n = n - 1)
			 INSERT INTO alerts SELECT * FROM gone`,
			[]string{"DELETE hooks", "UPDATE usage_periods", "INSERT alerts"}},
		{"row locks are reads", "many",
			`SELECT 1 FROM hooks FOR UPDATE; SELECT 1 FROM hooks FOR UPDATE OF h SKIP LOCKED;
			 SELECT 1 FROM hooks FOR NO KEY UPDATE; SELECT 1 FROM a FOR UPDATE NOWAIT; SELECT 1 FROM b FOR KEY SHARE`,
			nil},
		{"comments and strings are not SQL", "exec",
			"-- UPDATE hooks SET a = 1\nSELECT 'DELETE FROM hooks' /* INSERT INTO hooks */ FROM x",
			nil},
		{"an apostrophe in a comment", "exec", "-- the gateway's\nUPDATE hooks SET a = 'x'", []string{"UPDATE hooks"}},
		{"copyfrom", "copyfrom", `INSERT INTO hooks (id, path) VALUES ($1, $2)`, []string{"COPY hooks"}},
		{"merge and truncate", "exec", `MERGE INTO a USING b ON true WHEN MATCHED THEN DO NOTHING; TRUNCATE TABLE c`,
			[]string{"MERGE a", "TRUNCATE c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, w := range writesOf(c.kind, c.sql) {
				got = append(got, w.verb+" "+w.table)
			}
			require.Equal(t, c.want, got)
		})
	}
}

// repoRoot is the nearest directory at or above the working directory
// that holds go.work.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.work at or above the working directory")
		dir = parent
	}
}

// serviceNames are the services with production SQL: services/<name>/internal/store.
func serviceNames(t *testing.T, root string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(root, "services", "*", "internal", "store"))
	require.NoError(t, err)
	var names []string
	for _, d := range dirs {
		names = append(names, filepath.Base(filepath.Dir(filepath.Dir(d))))
	}
	sort.Strings(names)
	require.Subset(t, names, []string{"dispatcher", "gateway", "notifier", "scheduler"})
	return names
}

// place is where a service writes a table: a query of one of its files.
type place struct{ file, query, verb string }

func (p place) String() string { return fmt.Sprintf("%s: %s (%s)", p.file, p.query, p.verb) }

func places(ps []place) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// serviceWrites is every write of the service's production SQL, by table.
func serviceWrites(t *testing.T, root, svc string) map[string][]place {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "services", svc, "internal", "store", "*.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no SQL in services/%s/internal/store", svc)
	byTable := map[string][]place{}
	for _, f := range files {
		text, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, f)
		require.NoError(t, err)
		for _, q := range splitQueries(string(text)) {
			for _, w := range writesOf(q.kind, q.sql) {
				byTable[w.table] = append(byTable[w.table], place{file: filepath.ToSlash(rel), query: q.name, verb: w.verb})
			}
		}
	}
	return byTable
}

// query is one sqlc query: its name, its kind (one, many, exec, copyfrom...)
// and its SQL, comments included.
type query struct{ name, kind, sql string }

// sqlcName is sqlc's annotation that starts a query.
var sqlcName = regexp.MustCompile(`(?m)^--\s*name:\s*(\w+)\s+:(\w+)`)

// splitQueries cuts a file into its queries; what comes before the first
// annotation is a query without a name.
func splitQueries(text string) []query {
	marks := sqlcName.FindAllStringSubmatchIndex(text, -1)
	var qs []query
	if len(marks) == 0 || marks[0][0] > 0 {
		end := len(text)
		if len(marks) > 0 {
			end = marks[0][0]
		}
		qs = append(qs, query{name: "(before the first query)", sql: text[:end]})
	}
	for i, m := range marks {
		end := len(text)
		if i+1 < len(marks) {
			end = marks[i+1][0]
		}
		qs = append(qs, query{name: text[m[2]:m[3]], kind: text[m[4]:m[5]], sql: text[m[1]:end]})
	}
	return qs
}

// write is a statement's write of a table.
type write struct{ table, verb string }

// ident is a table name, optionally schema-qualified and quoted.
const ident = `((?:"?\w+"?\.)?"?[A-Za-z_]\w*"?)`

var (
	insertInto = regexp.MustCompile(`(?i)\bINSERT\s+INTO\s+` + ident)
	deleteFrom = regexp.MustCompile(`(?i)\bDELETE\s+FROM\s+(?:ONLY\s+)?` + ident)
	mergeInto  = regexp.MustCompile(`(?i)\bMERGE\s+INTO\s+(?:ONLY\s+)?` + ident)
	truncate   = regexp.MustCompile(`(?i)\bTRUNCATE\s+(?:TABLE\s+)?(?:ONLY\s+)?` + ident)
	update     = regexp.MustCompile(`(?i)\bUPDATE\s+(?:ONLY\s+)?` + ident)
	lastWord   = regexp.MustCompile(`(\w+)\s*$`)

	// An UPDATE after these words is not a statement: FOR [NO KEY] UPDATE
	// locks rows, ON CONFLICT ... DO UPDATE is part of its INSERT, ON
	// UPDATE and BEFORE/AFTER/OR/OF UPDATE belong to keys and triggers.
	notUpdateAfter = map[string]bool{"FOR": true, "KEY": true, "DO": true, "ON": true, "OR": true,
		"OF": true, "BEFORE": true, "AFTER": true}
	// Nor is an UPDATE followed by these (FOR UPDATE OF, SKIP LOCKED, NOWAIT).
	notUpdateTarget = map[string]bool{"set": true, "of": true, "skip": true, "nowait": true, "on": true}
)

// writesOf lists the writes of a query's SQL in order: INSERT INTO,
// UPDATE, DELETE FROM, MERGE INTO, TRUNCATE, anywhere in it (in a CTE
// too), and for a :copyfrom query the COPY into its INSERT's table.
// Comments and string literals are left out first.
func writesOf(kind, sql string) []write {
	sql = clean(sql)
	type found struct {
		at int
		w  write
	}
	var all []found
	add := func(re *regexp.Regexp, verb string) {
		for _, m := range re.FindAllStringSubmatchIndex(sql, -1) {
			table := tableName(sql[m[2]:m[3]])
			if re == update {
				before := strings.ToUpper(lastWord.FindString(sql[:m[0]]))
				if notUpdateAfter[strings.TrimSpace(before)] || notUpdateTarget[table] {
					continue
				}
			}
			all = append(all, found{m[0], write{table: table, verb: verb}})
		}
	}
	insertVerb := "INSERT"
	if kind == "copyfrom" {
		insertVerb = "COPY"
	}
	add(insertInto, insertVerb)
	add(update, "UPDATE")
	add(deleteFrom, "DELETE")
	add(mergeInto, "MERGE")
	add(truncate, "TRUNCATE")
	sort.Slice(all, func(i, j int) bool { return all[i].at < all[j].at })
	var ws []write
	for _, f := range all {
		ws = append(ws, f.w)
	}
	return ws
}

// tableName drops an identifier's schema and quotes.
func tableName(s string) string {
	s = strings.ReplaceAll(s, `"`, "")
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	return strings.ToLower(s)
}

// clean returns sql without its comments (-- and /* */), every string
// literal in it made empty.
func clean(sql string) string {
	var b strings.Builder
	for i := 0; i < len(sql); {
		switch {
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return b.String()
			}
			i += j
		case strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return b.String()
			}
			b.WriteByte(' ')
			i += 2 + j + 2
		case sql[i] == '\'':
			j := i + 1
			for j < len(sql) && (sql[j] != '\'' || strings.HasPrefix(sql[j:], "''")) {
				if sql[j] == '\'' {
					j++
				}
				j++
			}
			b.WriteString("''")
			i = j + 1
		default:
			b.WriteByte(sql[i])
			i++
		}
	}
	return b.String()
}

var (
	createTable = regexp.MustCompile(`(?i)\bCREATE\s+(?:(?:GLOBAL|LOCAL)\s+)?(?:(?:TEMP|TEMPORARY|UNLOGGED)\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?` + ident)
	dropTable   = regexp.MustCompile(`(?i)\bDROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?` + ident)
	renameTable = regexp.MustCompile(`(?i)\bALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?` + ident + `\s+RENAME\s+TO\s+` + ident)
	gooseDown   = regexp.MustCompile(`(?m)^--\s*\+goose\s+Down\b`)
)

// migrationTables are the tables the migrations leave: the Up sections,
// in order, create, drop and rename them.
func migrationTables(t *testing.T, root string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "migrations", "*.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	sort.Strings(files)
	tables := map[string]bool{}
	for _, f := range files {
		text, err := os.ReadFile(f)
		require.NoError(t, err)
		up := string(text)
		if m := gooseDown.FindStringIndex(up); m != nil {
			up = up[:m[0]]
		}
		up = clean(up)
		type change struct {
			at       int
			re       *regexp.Regexp
			from, to string
		}
		var changes []change
		for _, re := range []*regexp.Regexp{createTable, dropTable, renameTable} {
			for _, m := range re.FindAllStringSubmatchIndex(up, -1) {
				c := change{at: m[0], re: re, from: tableName(up[m[2]:m[3]])}
				if re == renameTable {
					c.to = tableName(up[m[4]:m[5]])
				}
				changes = append(changes, c)
			}
		}
		sort.Slice(changes, func(i, j int) bool { return changes[i].at < changes[j].at })
		for _, c := range changes {
			switch c.re {
			case createTable:
				tables[c.from] = true
			case dropTable:
				delete(tables, c.from)
			case renameTable:
				if tables[c.from] {
					delete(tables, c.from)
					tables[c.to] = true
				}
			}
		}
	}
	require.NotEmpty(t, tables, "no CREATE TABLE in migrations/")
	return tables
}

// row is one row of the section's table.
type row struct {
	owner  string
	others map[string]bool
	line   int
}

// writerMark starts another writer in the third column: **service**: why.
var writerMark = regexp.MustCompile(`\*\*([^*]+)\*\*:`)

// docRows reads the section's table `| table | owner | other writers (and
// why) |`: a row per table, its owner a service, its other writers each
// "**service**: why" (none: "—").
func docRows(t *testing.T, root string, services []string) map[string]row {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, docPath))
	require.NoError(t, err)
	lines := strings.Split(string(text), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == section })
	require.GreaterOrEqual(t, start, 0, "%s has no section %q", docPath, section)

	rows := map[string]row{}
	inTable := false
	for i := start + 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "## ") {
			break
		}
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if !inTable {
			if len(cells) == 3 && cells[0] == "table" && cells[1] == "owner" && strings.HasPrefix(cells[2], "other writers") {
				inTable = true
				i++ // the |---| line
			}
			continue
		}
		where := fmt.Sprintf("%s:%d", docPath, i+1)
		require.Len(t, cells, 3, "%s: a row has three cells (no | inside one): %s", where, l)
		table := strings.Trim(cells[0], "` ")
		_, dup := rows[table]
		require.False(t, dup, "%s: a second row for %s", where, table)
		owner := strings.Trim(cells[1], "`* ")
		require.Contains(t, services, owner, "%s: %s's owner %q is not a service", where, table, owner)

		r := row{owner: owner, others: map[string]bool{}, line: i + 1}
		marks := writerMark.FindAllStringSubmatchIndex(cells[2], -1)
		for k, m := range marks {
			svc := cells[2][m[2]:m[3]]
			require.Contains(t, services, svc, "%s: %s's other writer %q is not a service", where, table, svc)
			require.NotEqual(t, owner, svc, "%s: %s's owner is listed as another writer too", where, table)
			require.False(t, r.others[svc], "%s: %s lists %s twice", where, table, svc)
			end := len(cells[2])
			if k+1 < len(marks) {
				end = marks[k+1][0]
			}
			why := strings.Trim(strings.ReplaceAll(cells[2][m[1]:end], "<br>", " "), " ;.")
			require.NotEmpty(t, why, "%s: %s's other writer %s has no reason", where, table, svc)
			r.others[svc] = true
		}
		rows[table] = r
	}
	require.True(t, inTable, "%s, %q: no table | table | owner | other writers (and why) |", docPath, section)
	require.NotEmpty(t, rows, "%s, %q: the table has no rows", docPath, section)
	return rows
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package configdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// File is the Markdown file with the configuration tables, from the
// repository's root.
const File = "docs/configuration.md"

// sharedRow is a row of File's "Every service" table: a variable that
// several services read with one meaning and one default. Own are the
// services that read it with another (and list it in their own table).
type sharedRow struct {
	Var string
	Own []string
}

// shared is the "Every service" table, in its order. Its Summary and
// default are those of the first service reading the variable that is not
// in Own; every other such service must say the same.
var shared = []sharedRow{
	{Var: "SUNDIAL_DATABASE_URL"},
	{Var: "SUNDIAL_NATS_URL"},
	{Var: "SUNDIAL_STREAM_REPLICAS"},
	{Var: "SUNDIAL_LOG_LEVEL"},
	{Var: "SUNDIAL_SECRET_KEYS"},
	{Var: "SUNDIAL_SHUTDOWN_TIMEOUT"},
	{Var: "SUNDIAL_HEADER_PREFIX"},
	{Var: "SUNDIAL_PUBLIC_URL", Own: []string{"gateway"}},
	{Var: "SUNDIAL_DELIVERY_ALLOW_PRIVATE"},
	{Var: "SUNDIAL_DELIVERY_ALLOW_CIDRS"},
	{Var: "SUNDIAL_DELIVERY_CA_FILE"},
}

// row is a table row as written: cells ready for Markdown.
type row struct {
	Vars    []string
	Default string
	UsedBy  string // only in the "Every service" table
	Meaning string
}

// Variables read outside the Configs (by the telemetry setup, by a
// service's main for the Go runtime): no Config field carries their
// meaning, so it is kept here, at the end of their table.
var (
	sharedExtras = []row{{
		Vars: []string{"OTEL_EXPORTER_OTLP_ENDPOINT"}, Default: Unset, UsedBy: "all",
		Meaning: "export traces and metrics by OTLP/HTTP when set (read by the telemetry setup, not the Config)",
	}}
	serviceExtras = map[string][]row{
		"scheduler": {{
			Vars: []string{"GOGC", "GOMEMLIMIT"}, Default: "`200`, `75MiB`",
			Meaning: "the Go runtime's; the scheduler's `main` sets these defaults when they are unset " +
				"(half as many collections of a burst's batches, and a soft ceiling that keeps the process under " +
				"100 MiB resident, far below the 192 MiB limit of [docs/operations.md](docs/operations.md))",
		}},
		"dispatcher": {{
			Vars: []string{"GOGC", "GOMEMLIMIT"}, Default: "`200`, `80MiB`",
			Meaning: "the Go runtime's; the dispatcher's `main` sets these defaults when they are unset " +
				"(fewer collections of its short-lived heap, and a ceiling under 100 MiB)",
		}},
	}
)

// config is what the tables are made of: each service's fields and their
// default cells.
type config struct {
	fields   map[string][]Field // by service
	defaults map[string]map[string]string
}

func readConfig(root string) (config, error) {
	c := config{fields: map[string][]Field{}, defaults: map[string]map[string]string{}}
	for _, s := range Services {
		src, err := os.ReadFile(filepath.Join(root, s.ConfigFile()))
		if err != nil {
			return config{}, fmt.Errorf("read %s's Config: %w", s.Name, err)
		}
		if c.fields[s.Name], err = Fields(s.ConfigFile(), src); err != nil {
			return config{}, err
		}
		if c.defaults[s.Name], err = Defaults(s.Load); err != nil {
			return config{}, fmt.Errorf("%s: %w", s.Name, err)
		}
		for _, f := range c.fields[s.Name] {
			if _, ok := c.defaults[s.Name][f.Var]; !ok {
				// read through a wrapper of the Config, which starts
				// at its zero value (Defaults)
				c.defaults[s.Name][f.Var] = Unset
			}
		}
	}
	return c, nil
}

func (c config) field(service, v string) (Field, bool) {
	i := slices.IndexFunc(c.fields[service], func(f Field) bool { return f.Var == v })
	if i < 0 {
		return Field{}, false
	}
	return c.fields[service][i], true
}

// sharedTable is the rows of "Every service".
func (c config) sharedTable() ([]row, error) {
	rows := make([]row, 0, len(shared)+len(sharedExtras))
	for _, s := range shared {
		r, err := c.sharedRow(s)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return append(rows, sharedExtras...), nil
}

func (c config) sharedRow(s sharedRow) (row, error) {
	var r row
	var users []string
	for _, svc := range Services {
		f, ok := c.field(svc.Name, s.Var)
		if !ok || slices.Contains(s.Own, svc.Name) {
			continue
		}
		def := c.defaults[svc.Name][s.Var]
		if users == nil {
			r = row{Vars: []string{s.Var}, Default: def, Meaning: f.Summary}
		} else if f.Summary != r.Meaning || def != r.Default {
			return row{}, fmt.Errorf("%s: the %s's comment or default differs from the %s's; "+
				"a shared variable has one meaning and one default (or an own row: sharedRow.Own)", s.Var, svc.Name, users[0])
		}
		users = append(users, svc.Name)
	}
	if users == nil {
		return row{}, fmt.Errorf("%s: listed as shared, read by no service", s.Var)
	}
	r.UsedBy = strings.Join(users, ", ")
	if len(users) == len(Services) {
		r.UsedBy = "all"
	}
	return r, nil
}

// serviceTable is the rows of a service's section of File: its
// variables that "Every service" does not speak for.
func (c config) serviceTable(service string) []row {
	var rows []row
	for _, f := range c.fields[service] {
		if i := slices.IndexFunc(shared, func(s sharedRow) bool { return s.Var == f.Var }); i >= 0 && !slices.Contains(shared[i].Own, service) {
			continue
		}
		rows = append(rows, row{Vars: []string{f.Var}, Default: c.defaults[service][f.Var], Meaning: f.Summary})
	}
	return append(rows, serviceExtras[service]...)
}

// tables are the generated tables by their marker's name: "every-service"
// and each service's name (its section of File).
func (c config) tables() (map[string][]row, error) {
	out := map[string][]row{}
	var err error
	if out["every-service"], err = c.sharedTable(); err != nil {
		return nil, err
	}
	for _, s := range Services {
		out[s.Name] = c.serviceTable(s.Name)
	}
	return out, nil
}

// render writes rows as a Markdown table, with a "used by" column when
// withUsedBy.
func render(rows []row, withUsedBy bool) string {
	var b strings.Builder
	if withUsedBy {
		b.WriteString("| variable | default | used by | meaning |\n|---|---|---|---|\n")
	} else {
		b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	}
	for _, r := range rows {
		vars := make([]string, len(r.Vars))
		for i, v := range r.Vars {
			vars[i] = "`" + v + "`"
		}
		cells := []string{strings.Join(vars, ", "), r.Default}
		if withUsedBy {
			cells = append(cells, r.UsedBy)
		}
		cells = append(cells, r.Meaning)
		for i, cell := range cells {
			cells[i] = strings.ReplaceAll(cell, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// link is a Markdown link: [text](target).
var link = regexp.MustCompile(`\[([^\]]*)\]\(([^)]*)\)`)

// relink makes the link targets of markdown, which the Configs' comments
// write from the repository's root (as a comment cites a file), relative to
// the folder dir that File is in, so that they work where File shows them;
// a link's text that is its file's path becomes the new path too. A URL,
// an anchor and an absolute path are left alone.
func relink(markdown, dir string) string {
	return link.ReplaceAllStringFunc(markdown, func(m string) string {
		parts := link.FindStringSubmatch(m)
		text, target := parts[1], parts[2]
		file, anchor, _ := strings.Cut(target, "#")
		if file == "" || strings.Contains(file, "://") || strings.HasPrefix(file, "/") {
			return m
		}
		rel, err := filepath.Rel(dir, file)
		if err != nil {
			return m
		}
		rel = filepath.ToSlash(rel)
		if text == file {
			text = rel
		}
		if anchor != "" {
			rel += "#" + anchor
		}
		return "[" + text + "](" + rel + ")"
	})
}

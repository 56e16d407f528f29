package configdoc_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/deploy/local/internal/configdoc"
	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/secretbox"
)

// root is the repository, from this package's folder.
const root = "../../../.."

// loaders are the services' loaders by name.
func loaders() map[string]configdoc.Loader {
	out := map[string]configdoc.Loader{}
	for _, s := range configdoc.Services {
		out[s.Name] = s.Load
	}
	return out
}

// documented is what a table says a service reads: each variable and its
// row. Only SUNDIAL_ variables: the others in the tables (the Go runtime's,
// OpenTelemetry's) are not read by the Configs.
type documented map[string]configdoc.Row

func (d documented) add(t *testing.T, row configdoc.Row) {
	t.Helper()
	for _, v := range row.Variables {
		if !strings.HasPrefix(v, "SUNDIAL_") {
			continue
		}
		prev, dup := d[v]
		require.False(t, dup, "%s listed twice for one service (lines %d and %d)", v, prev.Line, row.Line)
		d[v] = row
	}
}

// page is configdoc.File's tables for service: the rows of "Every service"
// that it uses, and its own section's.
func page(t *testing.T, service string) documented {
	t.Helper()
	d := documented{}
	for _, row := range rows(t, configdoc.File) {
		shared := row.Section == "Every service" && row.UsedByService(service)
		if shared || strings.EqualFold(row.Section, service) {
			d.add(t, row)
		}
	}
	return d
}

func rows(t *testing.T, path string) []configdoc.Row {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	require.NoError(t, err)
	return configdoc.Rows(string(b))
}

// read is every variable load reads, observed through its lookup: the list
// comes from the loader itself, so it cannot drift from it.
func read(t *testing.T, load configdoc.Loader) []string {
	t.Helper()
	var names []string
	_, err := load(func(name string) (string, bool) {
		names = append(names, name)
		return "", false
	})
	require.NoError(t, err, "the defaults must be a valid configuration")
	slices.Sort(names)
	return slices.Compact(names)
}

// check holds a table to a loader: the same variables, and each row's
// default gives the Config the loader makes with nothing set (setting a
// variable to its documented default changes nothing).
func check(t *testing.T, load configdoc.Loader, table documented) {
	t.Helper()
	for v, row := range table {
		if !row.Required() {
			continue
		}
		require.Contains(t, configdoc.Examples, v, "%s is marked required (line %d): add a valid example value to configdoc.Examples", v, row.Line)
		_, err := load(envconf.Map(nil))
		require.ErrorContains(t, err, v, "%s is marked required (line %d), but the service starts without it", v, row.Line)
	}
	load = configdoc.WithExamples(load)
	listed := make([]string, 0, len(table))
	for v := range table {
		listed = append(listed, v)
	}
	slices.Sort(listed)
	require.Equal(t, read(t, load), listed, "the variables the Config reads (left) and those the table lists (right)")

	defaults, err := load(envconf.Map(nil))
	require.NoError(t, err)
	for _, v := range listed {
		row := table[v]
		value, unset, err := row.Value()
		require.NoError(t, err)
		if unset {
			continue // setting nothing is what the loader was given above
		}
		got, err := load(envconf.Map(map[string]string{v: value}))
		require.NoError(t, err, "%s=%s (the documented default, line %d)", v, value, row.Line)
		require.Equal(t, defaults, got, "%s: the documented default %q (line %d) is not the Config's default", v, value, row.Line)
	}
}

func TestThePageDocumentsEveryServicesConfiguration(t *testing.T) {
	t.Parallel()
	for name, load := range loaders() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, load, page(t, name))
		})
	}
}

// The Configs' comments link to files from the repository's root; on the
// page, which is not at the root, each link must still lead to its file.
func TestThePagesLinksLeadToFiles(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root, configdoc.File))
	require.NoError(t, err)
	links := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`).FindAllStringSubmatch(string(b), -1)
	require.NotEmpty(t, links)
	for _, l := range links {
		if strings.Contains(l[1], "://") {
			continue
		}
		_, err := os.Stat(filepath.Join(root, filepath.Dir(configdoc.File), l[1]))
		require.NoError(t, err, "%s links to %s", configdoc.File, l[1])
	}
}

func TestRowsReadsConfigurationTablesOnly(t *testing.T) {
	t.Parallel()
	md := strings.Join([]string{
		"## Shared",
		"",
		"| variable | default | used by | meaning |",
		"|---|---|---|---|",
		"| `A`, `B` | `1` | all | two |",
		"| `C` | unset | x, y | three |",
		"",
		"| operation | what it does |",
		"|---|---|",
		"| `D` | not configuration |",
		"### Y",
		"| variable | default | meaning |",
		"|---|---|---|",
		"| `E` | 16 (or 8) | prose |",
	}, "\n")
	got := configdoc.Rows(md)
	require.Len(t, got, 3)
	require.Equal(t, configdoc.Row{Section: "Shared", Variables: []string{"A", "B"}, Default: "`1`", UsedBy: "all", Line: 5}, got[0])
	require.True(t, got[1].UsedByService("y"))
	require.False(t, got[1].UsedByService("z"))
	_, unset, err := got[1].Value()
	require.NoError(t, err)
	require.True(t, unset)
	require.Equal(t, "Y", got[2].Section)
	_, _, err = got[2].Value()
	require.Error(t, err, "a default in prose cannot be checked")
}

// A struct tag cannot name a constant: the Configs' tags spell out the
// shared variables that the packages owning them name.
func TestConfigTagsNameTheSharedVariables(t *testing.T) {
	t.Parallel()
	shared := map[string]string{"StreamReplicas": event.ReplicasEnv, "SecretKeys": secretbox.EnvVar}
	for service, load := range loaders() {
		cfg, err := configdoc.WithExamples(load)(envconf.Map(nil))
		require.NoError(t, err, service)
		typ := reflect.TypeOf(cfg)
		for field, name := range shared {
			if f, ok := typ.FieldByName(field); ok {
				require.Equal(t, name, f.Tag.Get("env"), "%s: %s", service, field)
			}
		}
		_, ok := typ.FieldByName("StreamReplicas")
		require.True(t, ok, "%s: every service reads %s", service, event.ReplicasEnv)
	}
}

// The committed tables are what the generator writes from the Configs: a
// comment or default changed without make generate fails here.
func TestTheTablesAreGenerated(t *testing.T) {
	t.Parallel()
	generated, err := configdoc.Generate(root)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, configdoc.File))
	require.NoError(t, err)
	require.Equal(t, generated, string(b), "%s drifted from the Configs: run make generate", configdoc.File)
}

func TestFieldsReadsDocCommentsAndTags(t *testing.T) {
	t.Parallel()
	src := strings.Join([]string{
		"package app",
		"type Config struct {",
		"\t// the `A` summary",
		"\t// on two lines",
		"\t//",
		"\t// the detail",
		"\tA int `env:\"A\"`",
		"\tSub Sub",
		"\tNone int",
		"}",
		"type Sub struct {",
		"\t// b",
		"\tB string `env:\"B\"`",
		"}",
		"type fromEnv struct {",
		"\tConfig",
		"\t// c",
		"\tC []string `env:\"C\"`",
		"}",
	}, "\n")
	got, err := configdoc.Fields("config.go", []byte(src))
	require.NoError(t, err)
	require.Equal(t, []configdoc.Field{
		{Var: "A", Summary: "the `A` summary on two lines"},
		{Var: "B", Summary: "b"},
		{Var: "C", Summary: "c"},
	}, got)

	_, err = configdoc.Fields("config.go", []byte("package app\ntype Config struct {\n\tA int `env:\"A\"`\n}\n"))
	require.ErrorContains(t, err, "no doc comment")
}

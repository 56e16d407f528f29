package cli_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/testkit/pgtest"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/cli"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	t     *testing.T
	dbURL string
}

func setup(t *testing.T) bundle {
	t.Helper()
	return bundle{t: t, dbURL: pgtest.NewDB(t)}
}

type result struct {
	code           int
	stdout, stderr string
}

func (b bundle) run(args ...string) result {
	b.t.Helper()
	var stdout, stderr bytes.Buffer
	env := cli.Env{Stdout: &stdout, Stderr: &stderr, Lookup: envconf.Map(map[string]string{"SUNDIAL_DATABASE_URL": b.dbURL})}
	code := cli.Run(b.t.Context(), args, env)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// requireWorking checks the credentials against the database: the API key
// resolves to the project and the signing key is its active one.
func (b bundle) requireWorking(c app.Credentials) {
	b.t.Helper()
	pool, err := postgres.Connect(b.t.Context(), b.dbURL, 1)
	require.NoError(b.t, err)
	defer pool.Close()
	q := store.New(pool)
	projectID, err := apikey.NewVerifier(q).Verify(b.t.Context(), c.APIKey)
	require.NoError(b.t, err)
	require.Equal(b.t, c.ProjectID, projectID.String())
	secret, err := project.ActiveSigningKey(b.t.Context(), q, projectID)
	require.NoError(b.t, err)
	require.Equal(b.t, c.SigningKey, secret)
}

func TestCreateProjectPrintsReadableLines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.run("admin", "create-project", "--name", "Acme", "--domain", "hooks.example.com:8443")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	m := regexp.MustCompile(`(?m)^Project ID:\s+(\S+)\nAPI key:\s+(\S+)\nSigning key:\s+(\S+)$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	_, err := uuid.Parse(m[1])
	require.NoError(t, err)
	b.requireWorking(app.Credentials{ProjectID: m[1], APIKey: m[2], SigningKey: m[3]})
}

func TestCreateProjectJSONIsOneObjectAndNothingElse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.run("admin", "create-project", "-name=Acme", "-domain=[2001:db8::1]:8443", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	var c app.Credentials
	require.NoError(t, dec.Decode(&c))
	require.False(t, dec.More(), "nothing after the object")
	require.Equal(t, strings.TrimSpace(r.stdout), strings.TrimSpace(mustJSON(t, c)))
	b.requireWorking(c)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return string(out)
}

func TestBadUsageExitsWith2(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name string
		args []string
		says string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"admin without a command", []string{"admin"}, "missing command"},
		{"unknown admin command", []string{"admin", "delete-everything"}, "unknown command"},
		{"missing name", []string{"admin", "create-project", "--domain", "example.com"}, "--name is required"},
		{"missing domain", []string{"admin", "create-project", "--name", "Acme"}, "--domain is required"},
		{"name too long", []string{"admin", "create-project", "--name", strings.Repeat("n", 201), "--domain", "example.com"}, "--name"},
		{"blank name", []string{"admin", "create-project", "--name", "  ", "--domain", "example.com"}, "--name"},
		{"domain with scheme", []string{"admin", "create-project", "--name", "Acme", "--domain", "https://example.com"}, "without a scheme"},
		{"domain with path", []string{"admin", "create-project", "--name", "Acme", "--domain", "example.com/hooks"}, "without a path"},
		{"port 0", []string{"admin", "create-project", "--name", "Acme", "--domain", "example.com:0"}, "1 to 65535"},
		{"port too large", []string{"admin", "create-project", "--name", "Acme", "--domain", "example.com:65536"}, "1 to 65535"},
		{"IPv6 without brackets", []string{"admin", "create-project", "--name", "Acme", "--domain", "2001:db8::1"}, "brackets"},
		{"unknown flag", []string{"admin", "create-project", "--name", "Acme", "--domain", "example.com", "--colour", "red"}, "flag provided but not defined"},
		{"stray argument", []string{"admin", "create-project", "--name", "Acme", "--domain", "example.com", "extra"}, `unexpected argument "extra"`},
		{"migrate with an argument", []string{"migrate", "down"}, `unexpected argument "down"`},
		{"serve with a flag", []string{"serve", "--port", "1"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := b.run(tt.args...)
			require.Equal(t, cli.ExitUsage, r.code)
			require.Contains(t, r.stderr, tt.says)
			require.Contains(t, r.stderr, "Usage:")
			require.Empty(t, r.stdout)
		})
	}
}

func TestHelpExitsWith0(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.run("help")
	require.Equal(t, cli.ExitOK, r.code)
	require.Contains(t, r.stdout, "create-project")
	r = b.run("admin", "create-project", "-h")
	require.Equal(t, cli.ExitOK, r.code)
	require.Contains(t, r.stderr, "-domain")
}

func TestMigrateIsSafeToRunAgainAndConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t) // pgtest databases are already migrated
	var wg sync.WaitGroup
	results := make([]result, 3)
	for i := range results {
		wg.Go(func() { results[i] = b.run("migrate") })
	}
	wg.Wait()
	for _, r := range results {
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.Equal(t, "migrations: up to date\n", r.stdout)
	}
}

func TestCommandsReportConfigurationErrors(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	env := cli.Env{Stdout: &stdout, Stderr: &stderr, Lookup: envconf.Map(map[string]string{"SUNDIAL_LOG_LEVEL": "loud"})}
	code := cli.Run(t.Context(), []string{"migrate"}, env)
	require.Equal(t, cli.ExitError, code)
	require.Contains(t, stderr.String(), "SUNDIAL_LOG_LEVEL")
}

func TestCreateProjectFailsWithoutADatabase(t *testing.T) {
	t.Parallel()
	b := bundle{t: t, dbURL: "postgres://postgres@127.0.0.1:1/nothing?sslmode=disable&connect_timeout=2"}
	r := b.run("admin", "create-project", "--name", "Acme", "--domain", "example.com", "--json")
	require.Equal(t, cli.ExitError, r.code)
	require.Empty(t, r.stdout, "no half-made credentials")
	require.Contains(t, r.stderr, "database")
}

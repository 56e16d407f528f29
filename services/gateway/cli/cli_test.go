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
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/cli"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
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
	return b.runWithKeys(secrettest.Keys, args...)
}

// runWithKeys runs a command with SUNDIAL_SECRET_KEYS set to keys.
func (b bundle) runWithKeys(keys string, args ...string) result {
	b.t.Helper()
	var stdout, stderr bytes.Buffer
	env := cli.Env{Stdout: &stdout, Stderr: &stderr, Lookup: envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL": b.dbURL, "SUNDIAL_SECRET_KEYS": keys,
	})}
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
	secret, err := project.ActiveSigningKey(b.t.Context(), q, secrettest.Keyring(), projectID)
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
	code := cli.Run(t.Context(), []string{"admin", "reseal-secrets"}, env)
	require.Equal(t, envconf.ExitCode, code, "every service exits 2 on its configuration")
	require.True(t, strings.HasPrefix(stderr.String(), "gateway: configuration: "), stderr.String())
	require.Contains(t, stderr.String(), "SUNDIAL_LOG_LEVEL")
	stderr.Reset()
	require.Equal(t, envconf.ExitCode, cli.Run(t.Context(), []string{"serve"}, env))
	require.True(t, strings.HasPrefix(stderr.String(), "gateway: configuration: "), stderr.String())
}

// TestMigrateReadsOnlyTheDatabase: migrate runs with SUNDIAL_DATABASE_URL
// alone (the init container of every pod of charts/sundial has nothing else),
// whatever else of the gateway's is unset or wrong.
func TestMigrateReadsOnlyTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var stdout, stderr bytes.Buffer
	env := cli.Env{Stdout: &stdout, Stderr: &stderr, Lookup: envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL": b.dbURL, "SUNDIAL_LOG_LEVEL": "loud",
	})}
	require.Equal(t, cli.ExitOK, cli.Run(t.Context(), []string{"migrate"}, env), stderr.String())
	require.Equal(t, "migrations: up to date\n", stdout.String())
}

func TestCreateProjectFailsWithoutADatabase(t *testing.T) {
	t.Parallel()
	b := bundle{t: t, dbURL: "postgres://postgres@127.0.0.1:1/nothing?sslmode=disable&connect_timeout=2"}
	r := b.run("admin", "create-project", "--name", "Acme", "--domain", "example.com", "--json")
	require.Equal(t, cli.ExitError, r.code)
	require.Empty(t, r.stdout, "no half-made credentials")
	require.Contains(t, r.stderr, "database")
}

// planJSON is set-plan's --json output.
type planJSON struct {
	ProjectID          string `json:"projectId"`
	Quota              int64  `json:"quota"`
	HardCapPercent     int32  `json:"hardCapPercent"`
	RateLimitPerSecond int    `json:"rateLimitPerSecond"`
	RateLimitBurst     int    `json:"rateLimitBurst"`
	MaxRetentionDays   int    `json:"maxRetentionDays"`
}

// defaultPlan is a new project's plan and rate limit (the schema's defaults).
func defaultPlan(projectID string) planJSON {
	return planJSON{ProjectID: projectID, Quota: 100_000, HardCapPercent: 200, RateLimitPerSecond: 100, RateLimitBurst: 200,
		MaxRetentionDays: 90}
}

// newProject creates a project with the CLI and returns its id.
func (b bundle) newProject() string {
	b.t.Helper()
	r := b.run("admin", "create-project", "--name", "Acme", "--domain", "hooks.example.com", "--json")
	require.Equal(b.t, cli.ExitOK, r.code, r.stderr)
	var c app.Credentials
	require.NoError(b.t, json.Unmarshal([]byte(r.stdout), &c))
	return c.ProjectID
}

// storedPlan reads the project's plan and rate limit from the database.
func (b bundle) storedPlan(projectID string) planJSON {
	b.t.Helper()
	pool, err := postgres.Connect(b.t.Context(), b.dbURL, 1)
	require.NoError(b.t, err)
	defer pool.Close()
	row, err := store.New(pool).GetProjectLimits(b.t.Context(), uuid.MustParse(projectID))
	require.NoError(b.t, err)
	settings, err := store.New(pool).GetProjectSettings(b.t.Context(), uuid.MustParse(projectID))
	require.NoError(b.t, err)
	return planJSON{
		ProjectID: projectID, Quota: row.PlanQuota, HardCapPercent: row.PlanHardCapPercent,
		RateLimitPerSecond: int(row.RateLimitPerSecond), RateLimitBurst: int(row.RateLimitBurst),
		MaxRetentionDays: int(settings.PlanMaxRetentionDays),
	}
}

// decodePlan decodes set-plan's --json output, which must be one object
// with exactly the documented fields and nothing after it.
func decodePlan(t *testing.T, stdout string) planJSON {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var p planJSON
	require.NoError(t, dec.Decode(&p), stdout)
	require.False(t, dec.More(), "nothing after the object")
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(stdout), &fields))
	require.Len(t, fields, 6, stdout)
	return p
}

func TestSetPlanChangesOnlyTheGivenSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name   string
		flags  []string
		change func(*planJSON)
	}{
		{"quota", []string{"--quota", "5000"}, func(p *planJSON) { p.Quota = 5000 }},
		{"quota of 1", []string{"--quota=1"}, func(p *planJSON) { p.Quota = 1 }},
		{"large quota", []string{"--quota", "1099511627776"}, func(p *planJSON) { p.Quota = 1 << 40 }},
		{"hard cap", []string{"--hard-cap-percent", "150"}, func(p *planJSON) { p.HardCapPercent = 150 }},
		{"hard cap of 100", []string{"--hard-cap-percent", "100"}, func(p *planJSON) { p.HardCapPercent = 100 }},
		{"hard cap of 10000", []string{"--hard-cap-percent", "10000"}, func(p *planJSON) { p.HardCapPercent = 10000 }},
		{"rate limit", []string{"--rate-limit", "50"}, func(p *planJSON) { p.RateLimitPerSecond = 50 }},
		{"rate limit of 1", []string{"--rate-limit", "1"}, func(p *planJSON) { p.RateLimitPerSecond = 1 }},
		{"rate limit of 100000", []string{"--rate-limit", "100000"}, func(p *planJSON) { p.RateLimitPerSecond = 100_000 }},
		{"burst", []string{"--rate-burst", "500"}, func(p *planJSON) { p.RateLimitBurst = 500 }},
		{"burst of 1", []string{"--rate-burst", "1"}, func(p *planJSON) { p.RateLimitBurst = 1 }},
		{"burst of 1000000", []string{"--rate-burst", "1000000"}, func(p *planJSON) { p.RateLimitBurst = 1_000_000 }},
		{"quota and hard cap", []string{"--quota", "10", "--hard-cap-percent", "300"}, func(p *planJSON) {
			p.Quota, p.HardCapPercent = 10, 300
		}},
		{"rate limit and burst", []string{"--rate-limit", "20", "--rate-burst", "40"}, func(p *planJSON) {
			p.RateLimitPerSecond, p.RateLimitBurst = 20, 40
		}},
		{"burst equal to the rate limit", []string{"--rate-limit", "30", "--rate-burst", "30"}, func(p *planJSON) {
			p.RateLimitPerSecond, p.RateLimitBurst = 30, 30
		}},
		{"quota and rate limit", []string{"--quota", "7", "--rate-limit", "3"}, func(p *planJSON) {
			p.Quota, p.RateLimitPerSecond = 7, 3
		}},
		{"hard cap and burst", []string{"--hard-cap-percent", "250", "--rate-burst", "999"}, func(p *planJSON) {
			p.HardCapPercent, p.RateLimitBurst = 250, 999
		}},
		{"retention bound", []string{"--max-retention-days", "400"}, func(p *planJSON) { p.MaxRetentionDays = 400 }},
		{"retention bound of 1", []string{"--max-retention-days", "1"}, func(p *planJSON) { p.MaxRetentionDays = 1 }},
		{"retention bound of 3650", []string{"--max-retention-days", "3650"}, func(p *planJSON) { p.MaxRetentionDays = 3650 }},
		{"everything", []string{"--quota", "1000", "--hard-cap-percent", "120", "--rate-limit", "10", "--rate-burst", "25", "--max-retention-days", "7"}, func(p *planJSON) {
			*p = planJSON{ProjectID: p.ProjectID, Quota: 1000, HardCapPercent: 120, RateLimitPerSecond: 10, RateLimitBurst: 25, MaxRetentionDays: 7}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := b.newProject()
			want := defaultPlan(id)
			tt.change(&want)
			r := b.run(append([]string{"admin", "set-plan", "--project", id, "--json"}, tt.flags...)...)
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			require.Empty(t, r.stderr)
			require.Equal(t, want, decodePlan(t, r.stdout), "the printed plan")
			require.Equal(t, want, b.storedPlan(id), "the stored plan")
		})
	}
}

func TestSetPlanKeepsEarlierChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newProject()
	for _, flags := range [][]string{{"--quota", "42"}, {"--hard-cap-percent", "175"}, {"--rate-limit", "8"}, {"--rate-burst", "16"}, {"--max-retention-days", "5"}} {
		r := b.run(append([]string{"admin", "set-plan", "--project", id}, flags...)...)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
	want := planJSON{ProjectID: id, Quota: 42, HardCapPercent: 175, RateLimitPerSecond: 8, RateLimitBurst: 16, MaxRetentionDays: 5}
	require.Equal(t, want, b.storedPlan(id))
}

func TestSetPlanConcurrentChangesOfDifferentSettingsAllStay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newProject()
	changes := [][]string{{"--quota", "42"}, {"--hard-cap-percent", "175"}, {"--rate-limit", "8"}, {"--rate-burst", "16"}, {"--max-retention-days", "5"}}
	var wg sync.WaitGroup
	results := make([]result, len(changes))
	for i, flags := range changes {
		wg.Go(func() { results[i] = b.run(append([]string{"admin", "set-plan", "--project", id}, flags...)...) })
	}
	wg.Wait()
	for _, r := range results {
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
	want := planJSON{ProjectID: id, Quota: 42, HardCapPercent: 175, RateLimitPerSecond: 8, RateLimitBurst: 16, MaxRetentionDays: 5}
	require.Equal(t, want, b.storedPlan(id))
}

func TestSetPlanPrintsReadableLines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newProject()
	r := b.run("admin", "set-plan", "--project", id, "--quota", "1000", "--hard-cap-percent", "150", "--rate-limit", "20")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "Plan updated.\n"+
		"Project ID:  "+id+"\n"+
		"Quota:       1000 hooks per billing period\n"+
		"Hard cap:    150% of the quota (1500 hooks)\n"+
		"Rate limit:  20 requests per second per API key\n"+
		"Burst:       200 requests\n"+
		"Retention:   at most 90 days\n", r.stdout)
	require.Empty(t, r.stderr)
}

func TestSetPlanJSONIsOneObjectAndNothingElse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newProject()
	r := b.run("admin", "set-plan", "-project="+id, "-rate-burst=300", "-json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	want := defaultPlan(id)
	want.RateLimitBurst = 300
	require.Equal(t, want, decodePlan(t, r.stdout))
	require.Equal(t, mustJSON(t, want)+"\n", r.stdout)
	require.JSONEq(t, `{"projectId":"`+id+`","quota":100000,"hardCapPercent":200,"rateLimitPerSecond":100,"rateLimitBurst":300,"maxRetentionDays":90}`, r.stdout)
}

func TestSetPlanBadUsageExitsWith2AndChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newProject()
	tests := []struct {
		name  string
		flags []string
		says  string
	}{
		{"missing project", []string{"--quota", "10"}, "--project is required"},
		{"empty project", []string{"--project", "", "--quota", "10"}, "--project is required"},
		{"project not a UUID", []string{"--project", "acme", "--quota", "10"}, `--project: "acme" is not a project id`},
		{"nothing to change", []string{"--project", id}, "at least one of --quota, --hard-cap-percent, --rate-limit, --rate-burst, --max-retention-days"},
		{"retention bound 0", []string{"--project", id, "--max-retention-days", "0"}, "--max-retention-days: must be 1 to 3650, got 0"},
		{"retention bound 3651", []string{"--project", id, "--max-retention-days", "3651"}, "--max-retention-days: must be 1 to 3650, got 3651"},
		{"only --json", []string{"--project", id, "--json"}, "at least one of --quota"},
		{"quota 0", []string{"--project", id, "--quota", "0"}, "--quota: must be at least 1, got 0"},
		{"quota negative", []string{"--project", id, "--quota", "-5"}, "--quota: must be at least 1, got -5"},
		{"quota not a number", []string{"--project", id, "--quota", "lots"}, "-quota"},
		{"quota beyond int64", []string{"--project", id, "--quota", "9223372036854775808"}, "-quota"},
		{"hard cap 99", []string{"--project", id, "--hard-cap-percent", "99"}, "--hard-cap-percent: must be 100 to 10000, got 99"},
		{"hard cap 0", []string{"--project", id, "--hard-cap-percent", "0"}, "--hard-cap-percent: must be 100 to 10000, got 0"},
		{"hard cap 10001", []string{"--project", id, "--hard-cap-percent", "10001"}, "--hard-cap-percent: must be 100 to 10000, got 10001"},
		{"hard cap beyond int32", []string{"--project", id, "--hard-cap-percent", "4294967396"}, "--hard-cap-percent: must be 100 to 10000"},
		{"hard cap a fraction", []string{"--project", id, "--hard-cap-percent", "150.5"}, "-hard-cap-percent"},
		{"rate limit 0", []string{"--project", id, "--rate-limit", "0"}, "--rate-limit: must be 1 to 100000 requests per second, got 0"},
		{"rate limit negative", []string{"--project", id, "--rate-limit", "-1"}, "--rate-limit: must be 1 to 100000"},
		{"rate limit 100001", []string{"--project", id, "--rate-limit", "100001"}, "--rate-limit: must be 1 to 100000 requests per second, got 100001"},
		{"burst 0", []string{"--project", id, "--rate-burst", "0"}, "--rate-burst: must be 1 to 1000000 requests, got 0"},
		{"burst 1000001", []string{"--project", id, "--rate-burst", "1000001"}, "--rate-burst: must be 1 to 1000000 requests, got 1000001"},
		{"burst below the rate limit", []string{"--project", id, "--rate-limit", "50", "--rate-burst", "49"}, "--rate-burst: must be at least --rate-limit (50), got 49"},
		{"one bad among good", []string{"--project", id, "--quota", "10", "--hard-cap-percent", "50", "--rate-limit", "5"}, "--hard-cap-percent"},
		{"unknown flag", []string{"--project", id, "--plan", "gold"}, "flag provided but not defined"},
		{"stray argument", []string{"--project", id, "--quota", "10", "extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := b.run(append([]string{"admin", "set-plan"}, tt.flags...)...)
			require.Equal(t, cli.ExitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, tt.says)
			require.Contains(t, r.stderr, "Usage:")
			require.Empty(t, r.stdout)
		})
	}
	require.Equal(t, defaultPlan(id), b.storedPlan(id), "nothing changed")
}

func TestSetPlanOfAnUnknownProjectFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newProject()
	unknown := uuid.NewString()
	for _, flags := range [][]string{{"--quota", "10"}, {"--rate-limit", "5"}, {"--hard-cap-percent", "150", "--rate-burst", "10", "--json"}} {
		r := b.run(append([]string{"admin", "set-plan", "--project", unknown}, flags...)...)
		require.Equal(t, cli.ExitError, r.code, r.stderr)
		require.Equal(t, "gateway: set-plan: no such project "+unknown+"\n", r.stderr)
		require.Empty(t, r.stdout)
	}
	require.Equal(t, defaultPlan(id), b.storedPlan(id), "other projects are untouched")
}

func TestSetPlanHelpAndUsage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.run("help")
	require.Equal(t, cli.ExitOK, r.code)
	require.Contains(t, r.stdout, "gateway admin set-plan --project ID")
	r = b.run("admin", "set-plan", "-h")
	require.Equal(t, cli.ExitOK, r.code)
	for _, f := range []string{"-project", "-quota", "-hard-cap-percent", "-rate-limit", "-rate-burst", "-json"} {
		require.Contains(t, r.stderr, f)
	}
	r = b.run("admin")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "set-plan")
}

func TestSetPlanFailsWithoutADatabase(t *testing.T) {
	t.Parallel()
	b := bundle{t: t, dbURL: "postgres://postgres@127.0.0.1:1/nothing?sslmode=disable&connect_timeout=2"}
	r := b.run("admin", "set-plan", "--project", uuid.NewString(), "--quota", "10", "--json")
	require.Equal(t, cli.ExitError, r.code)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "database")
	require.NotContains(t, r.stderr, "no such project")
}

func TestCreateUserPrintsASetPasswordLink(t *testing.T) {
	t.Parallel()
	b := setup(t)
	creds, err := app.CreateProject(t.Context(), app.Database{URL: b.dbURL, SecretKeys: secrettest.Keys}, "Acme", "hooks.example.com")
	require.NoError(t, err)

	// Without SUNDIAL_PUBLIC_URL: a relative link, and says so.
	r := b.run("admin", "create-user", "--email", "Ada@Example.com", "--project", creds.ProjectID, "--role", "viewer")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "User ada@example.com is viewer of project "+creds.ProjectID)
	require.Contains(t, r.stdout, "SUNDIAL_PUBLIC_URL is not set")
	require.Regexp(t, `\n  /dashboard/set-password\?token=[A-Za-z0-9_-]{43}\n`, r.stdout)

	// Again, with a public URL: the same user, now an owner, a new link.
	var stdout, stderr bytes.Buffer
	code := cli.Run(t.Context(), []string{"admin", "create-user", "--email", "ada@example.com", "--project", creds.ProjectID, "--role", "owner"},
		cli.Env{Stdout: &stdout, Stderr: &stderr, Lookup: envconf.Map(map[string]string{
			"SUNDIAL_DATABASE_URL": b.dbURL, "SUNDIAL_SECRET_KEYS": secrettest.Keys, "SUNDIAL_PUBLIC_URL": "https://sundial.example.com/",
		})})
	require.Equal(t, cli.ExitOK, code, stderr.String())
	require.Regexp(t, `\n  https://sundial\.example\.com/dashboard/set-password\?token=[A-Za-z0-9_-]{43}\n`, stdout.String())
	require.Contains(t, stdout.String(), "is owner of project")

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"missing email", []string{"--project", creds.ProjectID, "--role", "owner"}, "--email is required"},
		{"bad email", []string{"--email", "nobody", "--project", creds.ProjectID, "--role", "owner"}, "--email"},
		{"bad role", []string{"--email", "a@example.com", "--project", creds.ProjectID, "--role", "admin"}, "--role"},
		{"unknown project", []string{"--email", "a@example.com", "--project", "11111111-2222-4333-8444-555555555555", "--role", "owner"}, "--project: no such project"},
		{"not an id", []string{"--email", "a@example.com", "--project", "acme", "--role", "owner"}, "--project"},
	} {
		r := b.run(append([]string{"admin", "create-user"}, c.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, c.name)
		require.Contains(t, r.stderr, c.want, c.name)
	}
}

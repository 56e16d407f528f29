package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/cmd/sundial/cli"
	sundial "github.com/sundial-run/sundial/sdk"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// etlFile is the reference's example, for project: a weekday 09:00
// Europe/Paris chain extract -> transform -> load, and a heartbeat.
func etlFile(project string) string {
	return `project = "` + project + `"
domain = "etl.example.com"

[retry]
min_retries = 4
delay_secs = 20
strategy = "exponential"
backoff_factor = 1.5
max_delay_secs = 900
jitter = true

[[sequences]]
name = "nightly-etl"
catch_up = "none"
overlap = "skip"

[sequences.schedule]
frequency = "weekly"
timezone = "Europe/Paris"
time = { hour = 9, minute = 0 }
days_of_week = ["mon", "tue", "wed", "thu", "fri"]

[sequences.steps.extract]
path = "/etl/extract"
data = { source = "crm", tables = ["accounts", "deals"], batch = 500 }

[sequences.steps.transform]
path = "/etl/transform"
depends_on = ["extract"]

[sequences.steps.load]
path = "/etl/load"
depends_on = ["transform"]
retry_override = { min_retries = 5, delay_secs = 30, strategy = "fixed" }

[[sequences]]
name = "heartbeat"
start_at = 2030-01-01T00:00:00Z
end_at = 2031-01-01T00:00:00Z

[sequences.schedule]
every = "15m"

[sequences.steps.ping]
path = "/ping"
data = '{"note": null}'
`
}

// writeFile writes text into a new file of the test's and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sundial.toml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// sdkClient is the SDK's client of the project, to see the live state
// without the tool.
func (b *bundle) sdkClient() *sundial.Client {
	return sundial.NewClient(b.creds.APIKey, sundial.WithBaseURL(b.baseURL))
}

// liveNames are the project's sequences' names, newest first.
func (b *bundle) liveNames() []string {
	b.t.Helper()
	var page sundial.SequencePage
	out := b.ok("sequences", "list", "--output", "json")
	require.NoError(b.t, json.Unmarshal([]byte(out), &page), out)
	names := []string{}
	for _, seq := range page.Data {
		names = append(names, seq.Name)
	}
	return names
}

func TestConfigApplyThenPullThenDiffIsEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	client := b.sdkClient()
	// A secret of the project, which pull must not write.
	_, err := client.Project.Update(context.Background(), sundial.ProjectPatch{
		AuthorizationHeader: sundial.SetTo("Bearer s3cret-header")})
	require.NoError(t, err)

	file := writeFile(t, etlFile(b.creds.ProjectID))
	out := b.ok("config", "apply", "--yes", "--file", file)
	require.Contains(t, out, "~ project cli\n")
	require.Contains(t, out, `    ~ domain: "receiver.example:443" -> "etl.example.com"`)
	require.Contains(t, out, "+ sequence nightly-etl\n")
	require.Contains(t, out, "+ sequence heartbeat\n")
	require.Contains(t, out, "Plan: 2 to create, 1 to change, 0 to delete.\nApplied.\n")
	require.ElementsMatch(t, []string{"nightly-etl", "heartbeat"}, b.liveNames())

	project, err := client.Project.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, "etl.example.com", project.Domain)
	require.Equal(t, sundial.ProjectRetryPolicy{MinRetries: 4, DelaySecs: 20, Strategy: "exponential",
		BackoffFactor: 1.5, MaxDelaySecs: 900, Jitter: true}, project.RetryPolicy)
	etl, err := client.Sequences.FindByName(context.Background(), "nightly-etl")
	require.NoError(t, err)
	require.Equal(t, []string{"extract", "transform", "load"}, []string{etl.Steps[0].Name, etl.Steps[1].Name, etl.Steps[2].Name})
	require.Equal(t, sundial.SequenceSchedule{Frequency: "weekly", Timezone: "Europe/Paris", Time: sundial.At(9, 0),
		DaysOfWeek: []string{"mon", "tue", "wed", "thu", "fri"}}, etl.Schedule)

	// The file agrees with the live state at once...
	res := b.run("", "config", "diff", "--file", file)
	require.Equal(t, cli.ExitOK, res.code, res.stdout+res.stderr)
	require.Equal(t, "No changes: the live state is the file's.\n", res.stdout)

	// ...and so does the file pulled from it.
	pulled := filepath.Join(t.TempDir(), "pulled.toml")
	require.Contains(t, b.ok("config", "pull", "--file", pulled), "2 sequence(s)")
	text, err := os.ReadFile(pulled)
	require.NoError(t, err)
	require.Contains(t, string(text), `project = "`+b.creds.ProjectID+`"`)
	require.NotContains(t, string(text), "s3cret-header")
	require.NotContains(t, string(text), b.creds.APIKey)
	res = b.run("", "config", "diff", "--file", pulled, "--output", "json")
	require.Equal(t, cli.ExitOK, res.code, string(text)+res.stdout+res.stderr)
	require.JSONEq(t, `{"file": "`+pulled+`", "changes": [], "applied": false}`, res.stdout)
	require.Contains(t, b.ok("config", "validate", "--file", pulled), "is valid: 2 sequence(s)")

	// Applied again, the pulled file changes nothing.
	require.Contains(t, b.ok("config", "apply", "--file", pulled), "No changes")

	// pull keeps an existing file unless --force.
	res = b.run("", "config", "pull", "--file", pulled)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--force: "+pulled+" exists")
	b.ok("config", "pull", "--file", pulled, "--force")
}

func TestConfigApplyDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	file := writeFile(t, etlFile(b.creds.ProjectID))
	require.Empty(t, b.liveNames())

	var res struct {
		Changes []struct {
			Op, Kind, Name string
		}
		Applied bool
	}
	out := b.ok("config", "apply", "--dry-run", "--file", file, "--output", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.False(t, res.Applied)
	require.Len(t, res.Changes, 3)
	require.Contains(t, b.ok("config", "apply", "--dry-run", "--file", file),
		"Plan: 2 to create, 1 to change, 0 to delete.\nDry run: nothing changed.\n")

	require.Empty(t, b.liveNames())
	project, err := b.sdkClient().Project.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, "receiver.example:443", project.Domain)
	require.Equal(t, cli.ExitError, b.run("", "config", "diff", "--file", file).code)
}

func TestConfigRefusesAnotherProjectsFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	other, err := gateway.CreateProject(context.Background(), gateway.Database{URL: b.dbURL, SecretKeys: secrettest.Keys},
		"other", "other.example:443")
	require.NoError(t, err)
	file := writeFile(t, etlFile(other.ProjectID))

	for _, args := range [][]string{{"apply", "--yes"}, {"apply", "--dry-run"}, {"diff"}} {
		res := b.run("", append(append([]string{"config"}, args...), "--file", file)...)
		require.Equal(t, cli.ExitError, res.code, args)
		require.Contains(t, res.stderr, `project: `+file+` is for project "`+other.ProjectID+`", but the API key is project cli's (`+b.creds.ProjectID+`)`)
	}
	require.Empty(t, b.liveNames())
	project, err := b.sdkClient().Project.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, "receiver.example:443", project.Domain)
}

func TestConfigDiffShowsAChangedStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	file := writeFile(t, etlFile(b.creds.ProjectID))
	b.ok("config", "apply", "--file", file)

	changed := strings.Replace(etlFile(b.creds.ProjectID), `path = "/etl/load"`, `path = "/etl/load-v2"`, 1)
	require.NoError(t, os.WriteFile(file, []byte(changed), 0o644))
	res := b.run("", "config", "diff", "--file", file)
	require.Equal(t, cli.ExitError, res.code, res.stderr)
	require.Empty(t, res.stderr, "changes are no error message")
	require.Contains(t, res.stdout, "~ sequence nightly-etl (")
	require.Contains(t, res.stdout, `    ~ steps.load.path: "/etl/load" -> "/etl/load-v2"`)
	require.Contains(t, res.stdout, "Plan: 0 to create, 1 to change, 0 to delete.")

	res = b.run("", "config", "diff", "--file", file, "-o", "json")
	require.Equal(t, cli.ExitError, res.code)
	var diff struct {
		Changes []struct {
			Op, Kind, Name string
			Fields         []struct{ Field, Live, File string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &diff), res.stdout)
	require.Len(t, diff.Changes, 1)
	require.Equal(t, "update", diff.Changes[0].Op)
	require.Equal(t, []struct{ Field, Live, File string }{{"steps.load.path", `"/etl/load"`, `"/etl/load-v2"`}}, diff.Changes[0].Fields)

	etl, err := b.sdkClient().Sequences.FindByName(context.Background(), "nightly-etl")
	require.NoError(t, err)
	b.ok("config", "apply", "--file", file)
	b.ok("config", "diff", "--file", file)
	after, err := b.sdkClient().Sequences.Get(context.Background(), etl.ID)
	require.NoError(t, err)
	require.Equal(t, "/etl/load-v2", after.Steps[2].Path)
	require.True(t, after.StartAt.Equal(etl.StartAt), "a file without start_at keeps the live one")

	// The API's refusal names the file's key.
	bad := strings.Replace(changed, `delay_secs = 30, strategy = "fixed"`, `delay_secs = 1, strategy = "fixed"`, 1)
	require.NoError(t, os.WriteFile(file, []byte(bad), 0o644))
	res = b.run("", "config", "apply", "--file", file)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, `update sequence "nightly-etl": sequences[0].steps.load.retry_override.delay_secs: `)
}

func TestConfigDeletesOnlyWithYes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	file := writeFile(t, etlFile(b.creds.ProjectID))
	b.ok("config", "apply", "--file", file)

	onlyETL := etlFile(b.creds.ProjectID)
	onlyETL = onlyETL[:strings.Index(onlyETL, "[[sequences]]\nname = \"heartbeat\"")]
	require.NoError(t, os.WriteFile(file, []byte(onlyETL), 0o644))
	res := b.run("", "config", "diff", "--file", file)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stdout, "- sequence heartbeat (")

	// No terminal to ask on, no --yes: refused, nothing changed.
	res = b.run("y\n", "config", "apply", "--file", file)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--yes: the plan deletes 1 sequence(s) (heartbeat)")
	require.ElementsMatch(t, []string{"nightly-etl", "heartbeat"}, b.liveNames())

	// On a terminal it asks; anything but yes changes nothing.
	res = b.runOn(true, "n\n", "config", "apply", "--file", file)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "Delete 1 sequence(s) (heartbeat) with their runs? [y/N] ")
	require.Contains(t, res.stderr, "not confirmed: nothing changed")
	require.ElementsMatch(t, []string{"nightly-etl", "heartbeat"}, b.liveNames())
	res = b.runOn(true, "y\n", "config", "apply", "--file", file)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "Plan: 0 to create, 0 to change, 1 to delete.\nApplied.\n")
	require.Equal(t, []string{"nightly-etl"}, b.liveNames())

	// --yes deletes without asking: a file of no sequence deletes the last.
	require.NoError(t, os.WriteFile(file, []byte(onlyETL[:strings.Index(onlyETL, "[[sequences]]")]), 0o644))
	require.Contains(t, b.ok("config", "apply", "--file", file, "--yes"), "Plan: 0 to create, 0 to change, 1 to delete.")
	require.Empty(t, b.liveNames())
}

func TestConfigValidateAndInit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	bad := writeFile(t, etlFile(b.creds.ProjectID)+"\n[sequences.schedule.extra]\nhour = 9\n")
	res := b.run("", "config", "validate", "--file", bad)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "sequences[1].schedule.extra: unknown key")

	dir := t.TempDir()
	file := filepath.Join(dir, "sundial.toml")
	require.Contains(t, b.ok("config", "init", "--file", file), "Wrote "+file+" for project cli")
	require.Contains(t, b.ok("config", "validate", "--file", file), "is valid: 0 sequence(s)")
	// The starter describes the live project: applying it changes nothing.
	b.ok("config", "diff", "--file", file)
	res = b.run("", "config", "init", "--file", file)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--force")

	// A project with sequences starts from pull: a starter would delete them.
	b.ok("config", "apply", "--file", writeFile(t, etlFile(b.creds.ProjectID)))
	res = b.run("", "config", "init", "--file", file, "--force")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "project cli has sequences, which a starter file would delete when applied: run `sundial config pull`")
}

func TestConfigChecksSchedulesWithTheAPIBeforeAnyChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	text := strings.Replace(etlFile(b.creds.ProjectID), `timezone = "Europe/Paris"`, `timezone = "Mars/Olympus_Mons"`, 1)
	text = strings.Replace(text, `end_at = 2031-01-01T00:00:00Z`, `end_at = 2029-01-01T00:00:00Z`, 1)
	file := writeFile(t, text)
	for _, args := range [][]string{{"diff"}, {"apply", "--dry-run"}, {"apply", "--yes"}} {
		res := b.run("", append(append([]string{"config"}, args...), "--file", file)...)
		require.Equal(t, cli.ExitError, res.code, args)
		require.Contains(t, res.stderr, "the API refuses the file's schedules, nothing changed:\n", args)
		require.Contains(t, res.stderr, "  sequences[0].schedule.timezone: ", args)
		require.Contains(t, res.stderr, "  sequences[1].end_at: ", args)
	}
	require.Empty(t, b.liveNames())
	project, err := b.sdkClient().Project.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, "receiver.example:443", project.Domain)
}

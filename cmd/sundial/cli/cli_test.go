package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// syncBuffer is an output written by the command's goroutines while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// result is a finished run.
type result struct {
	code           int
	stdout, stderr string
}

// runner runs the command in-process with its own environment and config
// directory.
type runner struct {
	env       map[string]string
	configDir string
	stdin     string
}

func newRunner(t *testing.T) *runner {
	return &runner{env: map[string]string{}, configDir: t.TempDir()}
}

func (r *runner) envFor(stdout, stderr *syncBuffer) Env {
	return Env{
		Stdin: strings.NewReader(r.stdin), Stdout: stdout, Stderr: stderr,
		Getenv: func(k string) string { return r.env[k] }, ConfigDir: r.configDir, Version: "1.2.3-test",
	}
}

func (r *runner) run(ctx context.Context, args ...string) result {
	var stdout, stderr syncBuffer
	code := Run(ctx, args, r.envFor(&stdout, &stderr))
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	res := r.run(context.Background(), "version")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Equal(t, "sundial 1.2.3-test (sdk 0.1.0)\n", res.stdout)
	res = r.run(context.Background(), "version", "--output", "json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.JSONEq(t, `{"version": "1.2.3-test", "sdkVersion": "0.1.0"}`, res.stdout)
}

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	res := newRunner(t).run(context.Background(), "--version")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Equal(t, "sundial 1.2.3-test (sdk 0.1.0)\n", res.stdout)
}

// TestCompletion: the shells' completion scripts, for the tool's commands.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{"bash": "__start_sundial", "zsh": "#compdef sundial", "fish": "complete -c sundial", "powershell": "Register-ArgumentCompleter"} {
		res := newRunner(t).run(context.Background(), "completion", shell)
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, want, shell)
	}
}

func TestUsageErrorsExit2NamingTheFlag(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	// Credentials are there: what fails is the command line alone.
	r.env[envAPIKey], r.env[envAPIURL] = "sk_test", "http://127.0.0.1:1"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"hooks", "schedule", "--post-in", "1h"}, "--path is required"},
		{[]string{"hooks", "schedule", "--path", "/x", "--data", "[1]", "--post-in", "1h"}, "--data: not a JSON object"},
		{[]string{"hooks", "schedule", "--path", "/x"}, "--post-at, --post-at-local (with --timezone) and --post-in"},
		{[]string{"hooks", "schedule", "--path", "/x", "--post-in", "1h", "--post-at", "2030-01-01T00:00:00Z"}, "exactly one of --post-at"},
		{[]string{"hooks", "schedule", "--path", "/x", "--post-at", "tomorrow"}, "--post-at: \"tomorrow\" is not an RFC 3339 time"},
		{[]string{"hooks", "schedule", "--path", "/x", "--post-at-local", "2030-12-01T09:00:00"}, "--timezone goes with --post-at-local"},
		{[]string{"hooks", "schedule", "--path", "/x", "--post-at-local", "9am", "--timezone", "UTC"}, "--post-at-local: \"9am\""},
		{[]string{"hooks", "schedule", "--path", "/x", "--post-in", "1h", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"hooks", "list", "--status", "done"}, "--status: \"done\""},
		{[]string{"hooks", "list", "--limit", "many"}, "--limit"},
		{[]string{"hooks", "list", "--ordering-key", ""}, "--ordering-key: must not be empty"},
		{[]string{"hooks", "get"}, "give one hook id"},
		{[]string{"hooks", "cancel"}, "give one hook id or more"},
		{[]string{"hooks", "cancel", "a", "--dry-run"}, "--dry-run goes with --tag"},
		{[]string{"hooks", "cancel", "a", "--limit", "5"}, "--limit goes with --tag"},
		{[]string{"hooks", "cancel", "a", "--tag", "t"}, "give hook ids or --tag, not both"},
		{[]string{"hooks", "cancel", "--key", "k", "--tag", "t"}, "give hook ids, --key or --tag, one of them"},
		{[]string{"hooks", "retry"}, "give one hook id or more, or --tag"},
		{[]string{"hooks", "retry", "a", "--tag", "t"}, "give hook ids or --tag, not both"},
		{[]string{"hooks", "replay", "a", "--from", "2030-01-01T00:00:00Z"}, "--from goes with --tag"},
		{[]string{"hooks", "retry", "--tag", "t", "--until", "tomorrow"}, "--until: \"tomorrow\" is not an RFC 3339 time"},
		{[]string{"hooks", "replay", "--tag", "t", "--data", "[1]"}, "--data: not a JSON object"},
		{[]string{"hooks", "retry", "a", "--post-at", "soon"}, "--post-at: \"soon\" is not an RFC 3339 time"},
		{[]string{"hooks", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"listen"}, "--forward-to is required"},
		{[]string{"listen", "--forward-to", "localhost:3000"}, "--forward-to: \"localhost:3000\" is not an http or https URL"},
		{[]string{"login", "--api-url", "ftp://x", "--api-key", "k"}, "--api-url"},
		{[]string{"version", "--output", "yaml"}, "--output: \"yaml\""},
		{[]string{"sequences", "get"}, "give one sequence name or id"},
		{[]string{"sequences", "trigger", "a", "b"}, "give one sequence name or id"},
		{[]string{"sequences", "preview", "a", "--count", "0x"}, "--count"},
		{[]string{"sequences", "preview", "a", "--count", "500"}, "--count: 500 is not from 1 to 100"},
		{[]string{"sequences", "list", "--limit", "many"}, "--limit"},
		{[]string{"sequences", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"config", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"config", "apply", "--dry"}, "unknown flag: --dry"},
		{[]string{"config", "diff", "extra"}, `unexpected argument "extra"`},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"--bogus"}, "sundial: unknown flag: --bogus"},
		{[]string{"hooks", "get", "--bogus"}, "sundial: hooks get: unknown flag: --bogus"},
	}
	for _, c := range cases {
		res := r.run(context.Background(), c.args...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", c.args, res.stderr)
		require.Contains(t, res.stderr, c.want, c.args)
		require.NotContains(t, res.stderr, "sundial: sundial", "one prefix: %v", c.args)
		require.Empty(t, res.stdout, c.args)
	}
	// With --output json the error is one JSON object.
	res := r.run(context.Background(), "hooks", "schedule", "--post-in", "1h", "--output", "json")
	require.Equal(t, ExitUsage, res.code)
	var e struct {
		Error string `json:"error"`
		Usage bool   `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stderr), &e), res.stderr)
	require.Equal(t, "--path is required", e.Error)
	require.True(t, e.Usage)
}

func TestCommandsWithoutAKeySayHowToGetOne(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	res := r.run(context.Background(), "hooks", "list")
	require.Equal(t, ExitError, res.code)
	require.Contains(t, res.stderr, "run `sundial login` or set SUNDIAL_API_KEY")
}

func TestConfigValidateNamesTheKey(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	path := filepath.Join(t.TempDir(), "sundial.toml")
	res := r.run(context.Background(), "config", "validate", "--file", path)
	require.Equal(t, ExitError, res.code)
	require.Contains(t, res.stderr, "--file: "+path+" does not exist")

	require.NoError(t, os.WriteFile(path, []byte(etlManifest+"\n[sequences.schedule.extra]\nhour = 9\n"), 0o644))
	res = r.run(context.Background(), "config", "validate", "--file", path, "-o", "json")
	require.Equal(t, ExitError, res.code)
	require.Contains(t, res.stderr, `sequences[1].schedule.extra: unknown key`)

	require.NoError(t, os.WriteFile(path, []byte(etlManifest), 0o644))
	res = r.run(context.Background(), "config", "validate", "--file", path, "-o", "json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.JSONEq(t, `{"file": "`+path+`", "valid": true, "sequences": 2}`, res.stdout)
}

func TestCredentialsFromTheFileAndTheEnvironment(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	s := &state{env: r.envFor(&syncBuffer{}, &syncBuffer{})}
	path, err := s.configPath()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(r.configDir, "sundial", "config.json"), path)
	require.NoError(t, saveConfig(path, config{APIURL: "https://file.example", APIKey: "sk_file"}))

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	info, err = os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	c, err := s.credentials()
	require.NoError(t, err)
	require.Equal(t, config{APIURL: "https://file.example", APIKey: "sk_file"}, c)

	r.env[envAPIKey] = "sk_env"
	c, err = s.credentials()
	require.NoError(t, err)
	require.Equal(t, config{APIURL: "https://file.example", APIKey: "sk_env"}, c)

	r.env[envAPIURL] = "https://env.example"
	c, err = s.credentials()
	require.NoError(t, err)
	require.Equal(t, config{APIURL: "https://env.example", APIKey: "sk_env"}, c)
}

func TestSaveConfigTightensAnOpenDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "sundial")
	require.NoError(t, os.Mkdir(dir, 0o755))
	path := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(path, []byte("{}"), 0o644))
	require.NoError(t, saveConfig(path, config{APIURL: "http://x", APIKey: "k"}))
	info, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	info, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

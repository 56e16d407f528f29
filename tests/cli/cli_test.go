package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/cmd/sundial/cli"
	sundial "github.com/sundial-run/sundial/sdk"
)

func TestLoginKeepsTheKeyForTheUserAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	out := b.ok("login", "--api-url", b.baseURL+"/", "--api-key", b.creds.APIKey, "--output", "json")
	var got struct {
		APIURL, ProjectID, ProjectName, ConfigPath string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	path := filepath.Join(b.configDir, "sundial", "config.json")
	require.Equal(t, b.baseURL, got.APIURL)
	require.Equal(t, b.creds.ProjectID, got.ProjectID)
	require.Equal(t, "cli", got.ProjectName)
	require.Equal(t, path, got.ConfigPath)
	require.NotContains(t, out, b.creds.APIKey, "the key is never printed")

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	info, err = os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, `{"apiUrl": "`+b.baseURL+`", "apiKey": "`+b.creds.APIKey+`"}`, string(raw))

	// The other commands use the file.
	require.Contains(t, b.ok("hooks", "list"), "ID")
}

func TestLoginReadsTheKeyFromStdin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(b.creds.APIKey+"\n", "login", "--api-url", b.baseURL)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	require.Contains(t, res.stderr, "API key: ")
	require.Contains(t, res.stdout, "Logged in to "+b.baseURL+" as project cli ("+b.creds.ProjectID+")")
	require.NotContains(t, res.stdout+res.stderr, b.creds.APIKey)
}

func TestLoginRefusesABadKeyAndKeepsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run("", "login", "--api-url", b.baseURL, "--api-key", "sk_not_a_key")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--api-key: the API at "+b.baseURL+" refused the key")
	_, err := os.Stat(filepath.Join(b.configDir, "sundial", "config.json"))
	require.ErrorIs(t, err, os.ErrNotExist)

	res = b.run("\n", "login", "--api-url", b.baseURL)
	require.Equal(t, cli.ExitUsage, res.code)
	require.Contains(t, res.stderr, "--api-key: no key given")
}

func TestTheEnvironmentWinsOverTheFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()

	// A key in the environment is used instead of the file's.
	b.env["SUNDIAL_API_KEY"] = "sk_not_a_key"
	res := b.run("", "hooks", "list", "--output", "json")
	require.Equal(t, cli.ExitError, res.code)
	var e struct {
		Status    int    `json:"status"`
		Code      string `json:"code"`
		RequestID string `json:"requestId"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stderr), &e), res.stderr)
	require.Equal(t, 401, e.Status)
	require.Equal(t, sundial.CodeUnauthorized, e.Code)
	require.NotEmpty(t, e.RequestID)

	// So is an address: with the file's key, on a file whose address is
	// wrong.
	delete(b.env, "SUNDIAL_API_KEY")
	b.ok("login", "--api-url", b.baseURL, "--api-key", b.creds.APIKey)
	path := filepath.Join(b.configDir, "sundial", "config.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"apiUrl": "http://127.0.0.1:1", "apiKey": "`+b.creds.APIKey+`"}`), 0o600))
	b.env["SUNDIAL_API_URL"] = b.baseURL
	require.Contains(t, b.ok("hooks", "list"), "ID")
}

func TestHooksCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()

	var h sundial.Hook
	out := b.ok("hooks", "schedule", "--path", "/webhooks/invoice?shop=1", "--data", `{"invoice": 1042}`,
		"--post-at", "2035-03-04T05:06:07+02:00", "--output", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &h), out)
	require.True(t, h.PostAt.Equal(time.Date(2035, 3, 4, 3, 6, 7, 0, time.UTC)), h.PostAt.String())
	require.Equal(t, "/webhooks/invoice?shop=1", h.Path)
	require.JSONEq(t, `{"invoice": 1042}`, string(h.Data))
	require.Equal(t, sundial.StatusPending, h.Status)

	var local sundial.Hook
	out = b.ok("hooks", "schedule", "--path", "/reminders", "--post-at-local", "2035-12-01T09:00:00",
		"--timezone", "Europe/Paris", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &local), out)
	require.True(t, local.PostAt.Equal(time.Date(2035, 12, 1, 8, 0, 0, 0, time.UTC)), local.PostAt.String())
	require.JSONEq(t, `{}`, string(local.Data))
	require.Regexp(t, `Local time:\s+2035-12-01T09:00:00 Europe/Paris \(tz database \d{4}[a-z]\)`, b.ok("hooks", "get", local.ID))

	before := time.Now()
	out = b.ok("hooks", "schedule", "--path", "/later", "--post-in", "2d")
	require.Regexp(t, `^Scheduled \S+ for \S+ \(/later\)\.\n$`, out)

	var got sundial.Hook
	out = b.ok("hooks", "get", h.ID, "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, h.ID, got.ID)
	require.Contains(t, b.ok("hooks", "get", h.ID), "https://receiver.example:443/webhooks/invoice?shop=1")

	var page sundial.HookPage
	out = b.ok("hooks", "list", "--sort-by", "postAt", "--sort-order", "ASC", "--output", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	require.Len(t, page.Data, 3)
	require.WithinDuration(t, before.Add(48*time.Hour), page.Data[0].PostAt, time.Minute)
	require.Equal(t, h.ID, page.Data[1].ID)
	require.Equal(t, local.ID, page.Data[2].ID)
	require.EqualValues(t, 3, page.Meta.TotalItems)

	// Pages of one, followed to the end.
	out = b.ok("hooks", "list", "--limit", "1", "--all", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	require.Len(t, page.Data, 3)
	text := b.ok("hooks", "list", "--limit", "1", "--status", "pending")
	require.Contains(t, text, "More: --cursor ")
	require.Equal(t, 3, strings.Count(text, "\n"), "header, one hook, the cursor: %s", text)

	// Nothing failed or completed yet: retry and replay apply to none.
	require.JSONEq(t, `{"affected": 0}`, b.ok("hooks", "retry", h.ID, "-o", "json"))
	require.JSONEq(t, `{"affected": 0}`, b.ok("hooks", "replay", h.ID, "-o", "json"))

	require.JSONEq(t, `{"cancelled": ["`+h.ID+`", "`+local.ID+`"]}`, b.ok("hooks", "cancel", h.ID, local.ID, "--output", "json"))
	res := b.run("", "hooks", "get", h.ID)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "404 not_found")
	out = b.ok("hooks", "list", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	require.Len(t, page.Data, 1)
}

func TestScheduleNamesTheFlagTheAPIRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	res := b.run("", "hooks", "schedule", "--path", "/x", "--post-in", "soon")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--post-in: ")
	res = b.run("", "hooks", "schedule", "--path", "no-slash", "--post-in", "1h")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--path: ")
}

// TestARefusedKeySaysWhereItCameFrom: a key the API refuses gets a hint
// naming its source: SUNDIAL_API_KEY, which wins over the saved login and
// is easy to forget, or the saved login itself (revoked meanwhile).
func TestARefusedKeySaysWhereItCameFrom(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()

	b.env["SUNDIAL_API_KEY"] = "sk_live_not_a_key"
	res := b.run("", "hooks", "list")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "401")
	require.Contains(t, res.stderr, "The API key comes from SUNDIAL_API_KEY, which wins over the one `sundial login` saved")
	require.NotContains(t, res.stderr, "sundial: sundial")

	// The saved key, revoked by another: the project's last key cannot be.
	delete(b.env, "SUNDIAL_API_KEY")
	b.ok("hooks", "list")
	ctx := t.Context()
	first := sundial.NewClient(b.creds.APIKey, sundial.WithBaseURL(b.baseURL))
	second, err := first.APIKeys.Create(ctx, sundial.CreateAPIKeyRequest{Name: "second"})
	require.NoError(t, err)
	keys, err := first.APIKeys.List(ctx)
	require.NoError(t, err)
	require.NotEqual(t, second.ID, keys[0].ID, "the login's key is the oldest")
	require.NoError(t, sundial.NewClient(second.Key, sundial.WithBaseURL(b.baseURL)).APIKeys.Revoke(ctx, keys[0].ID))
	res = b.run("", "hooks", "list")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "The API key `sundial login` saved was refused (revoked, or its project deleted): run `sundial login` with a valid key")
}

func TestHooksByKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()

	var first, second sundial.Hook
	out := b.ok("hooks", "schedule", "--path", "/first", "--post-in", "1d", "--key", "reminder:42", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &first), out)
	require.Equal(t, "reminder:42", first.Key)
	out = b.ok("hooks", "schedule", "--path", "/second", "--post-in", "2d", "--key", "reminder:42", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &second), out)
	require.NotEqual(t, first.ID, second.ID, "the pending hook was replaced")

	var got sundial.Hook
	out = b.ok("hooks", "get", "--key", "reminder:42", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, second.ID, got.ID)
	require.Contains(t, b.ok("hooks", "get", "--key", "reminder:42"), "reminder:42")
	res := b.run("", "hooks", "get", first.ID)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "404 not_found")

	require.JSONEq(t, `{"cancelledKey": "reminder:42"}`, b.ok("hooks", "cancel", "--key", "reminder:42", "-o", "json"))
	res = b.run("", "hooks", "get", "--key", "reminder:42")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "404 not_found")

	var tagged sundial.Hook
	out = b.ok("hooks", "schedule", "--path", "/tagged", "--post-in", "1d", "--tag", "campaign:spring", "--tag", "user-42", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &tagged), out)
	require.Equal(t, []string{"campaign:spring", "user-42"}, tagged.Tags)
	b.ok("hooks", "schedule", "--path", "/untagged", "--post-in", "1d")
	var page sundial.HookPage
	out = b.ok("hooks", "list", "--tag", "user-42", "--tag", "campaign:spring", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	require.Len(t, page.Data, 1)
	require.Equal(t, tagged.ID, page.Data[0].ID)
	require.Contains(t, b.ok("hooks", "get", tagged.ID), "campaign:spring, user-42")
	res = b.run("", "hooks", "list", "--tag", "a b")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--tag: ")

	res = b.run("", "hooks", "get", second.ID, "--key", "reminder:42")
	require.Equal(t, cli.ExitUsage, res.code, res.stderr)
	res = b.run("", "hooks", "cancel", second.ID, "--key", "reminder:42")
	require.Equal(t, cli.ExitUsage, res.code, res.stderr)
	res = b.run("", "hooks", "schedule", "--path", "/x", "--post-in", "1h", "--key", "caf\u00e9")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--key: ")
}

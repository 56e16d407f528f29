package cli

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/cmd/sundial/cli"
	sundial "github.com/sundial-run/sundial/sdk"
)

// TestOrderingKeysCommands against the gateway: a hook scheduled with
// --ordering-key shows it; its key's state is read; a key that is not
// held is not resumed (exit 1, 409); sundial.toml sets the project's
// ordering_on_failure, and pull writes it back.
func TestOrderingKeysCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()

	var h sundial.Hook
	out := b.ok("hooks", "schedule", "--path", "/accounts", "--post-in", "1d", "--ordering-key", "account/42", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &h), out)
	require.Equal(t, "account/42", h.OrderingKey)
	require.Regexp(t, `Ordering key:\s+account/42\n`, b.ok("hooks", "get", h.ID))

	var k sundial.OrderingKey
	out = b.ok("ordering-keys", "get", "account/42", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &k), out)
	require.Equal(t, sundial.OrderingKey{Key: "account/42", Unfinished: 1}, k)
	require.Regexp(t, `State:\s+free\n`, b.ok("ordering-keys", "get", "account/42"))
	require.Equal(t, "No ordering key is held.\n", b.ok("ordering-keys", "held"))

	res := b.run("", "ordering-keys", "resume", "account/42")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "409 conflict")
	res = b.run("", "ordering-keys", "get", "nobody")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "404 not_found")
	res = b.run("", "hooks", "schedule", "--path", "/x", "--post-in", "1h", "--ordering-key", "caf\u00e9")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--ordering-key: ")

	file := writeFile(t, "project = \""+b.creds.ProjectID+"\"\nordering_on_failure = \"hold\"\n")
	b.ok("config", "apply", "--file", file)
	p, err := b.sdkClient().Project.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, sundial.OrderingHold, p.OrderingOnFailure)
	require.Contains(t, b.ok("config", "diff", "--file", file), "No changes", "applied: no change left")
}

// TestListAKeysHooksCommand against the gateway: `hooks list
// --ordering-key` lists the key's hooks only, with the other flags of the
// list (--status, --sort-by, --limit with --all); a key the API refuses
// names the flag.
func TestListAKeysHooksCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	var ids []string
	for i, key := range []string{"account/42", "account/7", "account/42", "", "account/42"} {
		args := []string{"hooks", "schedule", "--path", "/h" + strconv.Itoa(i), "--post-in", strconv.Itoa(10-i) + "h", "-o", "json"}
		if key != "" {
			args = append(args, "--ordering-key", key)
		}
		var h sundial.Hook
		out := b.ok(args...)
		require.NoError(t, json.Unmarshal([]byte(out), &h), out)
		ids = append(ids, h.ID)
	}

	var page sundial.HookPage
	out := b.ok("hooks", "list", "--ordering-key", "account/42", "--sort-by", "postAt", "--sort-order", "ASC", "--limit", "1", "--all", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	got := make([]string, len(page.Data))
	for i, h := range page.Data {
		got[i] = h.ID
	}
	require.Equal(t, []string{ids[4], ids[2], ids[0]}, got, "the key's hooks by postAt, every page")

	text := b.ok("hooks", "list", "--ordering-key", "account/7", "--status", "pending")
	require.Contains(t, text, ids[1])
	require.Equal(t, 2, strings.Count(text, "\n"), "header and the key's one hook: %s", text)
	require.Equal(t, 1, strings.Count(b.ok("hooks", "list", "--ordering-key", "account/7", "--status", "failed"), "\n"), "the header alone")

	res := b.run("", "hooks", "list", "--ordering-key", strings.Repeat("k", 256))
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--ordering-key: ")
	res = b.run("", "hooks", "list", "--ordering-key", "")
	require.Equal(t, cli.ExitUsage, res.code, res.stderr)
}

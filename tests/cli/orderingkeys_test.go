package cli

import (
	"encoding/json"
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

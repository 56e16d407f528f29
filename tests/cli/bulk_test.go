package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/cmd/sundial/cli"
	sundial "github.com/sundial-run/sundial/sdk"
)

// The bulk commands select by tag, answer a dry run with the hooks they
// would act on, and name the flag of an edit the API refused.
func TestBulkCommandsByTag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	var tagged []string
	for _, at := range []string{"2035-01-03T00:00:00Z", "2035-01-01T00:00:00Z", "2035-01-02T00:00:00Z"} {
		var h sundial.Hook
		out := b.ok("hooks", "schedule", "--path", "/spring", "--post-at", at, "--tag", "campaign:spring", "-o", "json")
		require.NoError(t, json.Unmarshal([]byte(out), &h), out)
		tagged = append(tagged, h.ID)
	}
	b.ok("hooks", "schedule", "--path", "/other", "--post-at", "2035-01-01T00:00:00Z")

	var dry sundial.BulkResult
	out := b.ok("hooks", "cancel", "--tag", "campaign:spring", "--dry-run", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &dry), out)
	require.True(t, dry.DryRun)
	require.Equal(t, 3, dry.Affected)
	require.Len(t, dry.Sample, 3)
	require.Equal(t, []string{tagged[1], tagged[2], tagged[0]},
		[]string{dry.Sample[0].ID, dry.Sample[1].ID, dry.Sample[2].ID}, "earliest first")
	text := b.ok("hooks", "cancel", "--tag", "campaign:spring", "--until", "2035-01-02T00:00:00Z", "--dry-run")
	require.Contains(t, text, "cancel would act on 1 hook(s); nothing was changed.")
	require.Contains(t, text, tagged[1])

	var page sundial.HookPage
	out = b.ok("hooks", "list", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	require.Len(t, page.Data, 4, "a dry run cancels nothing")

	require.Equal(t, "cancel: 3 hook(s).\n", b.ok("hooks", "cancel", "--tag", "campaign:spring"))
	out = b.ok("hooks", "list", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	require.Len(t, page.Data, 1)
	require.Equal(t, "/other", page.Data[0].Path)

	require.JSONEq(t, `{"affected": 0, "dryRun": true}`, b.ok("hooks", "retry", page.Data[0].ID, "--dry-run", "-o", "json"),
		"a pending hook is not retried")
	res := b.run("", "hooks", "replay", page.Data[0].ID, "--path", "orders")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--path: ")
	require.Contains(t, res.stderr, "400 invalid_request")
}

package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/cmd/sundial/cli"
	sundial "github.com/sundial-run/sundial/sdk"
)

// TestBulkJobCommands against the gateway, whose runner does the work: a
// dry run counts the tagged hooks of the range and creates nothing; create
// --wait follows the job to its end; get, list and a refused cancel show
// the job that ended.
func TestBulkJobCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.login()
	for _, at := range []string{"2035-02-01T00:00:00Z", "2035-02-01T06:00:00Z", "2035-02-03T00:00:00Z"} {
		b.ok("hooks", "schedule", "--path", "/spring", "--post-at", at, "--tag", "campaign:spring")
	}
	b.ok("hooks", "schedule", "--path", "/other", "--post-at", "2035-02-01T00:00:00Z")
	selection := []string{"--action", "cancel", "--start", "2035-02-01T00:00:00Z", "--end", "2035-02-02T00:00:00Z", "--tag", "campaign:spring"}

	text := b.ok(append([]string{"bulk-jobs", "create", "--dry-run"}, selection...)...)
	require.Contains(t, text, "cancel would act on 2 hook(s); nothing was changed.")
	require.Equal(t, "No bulk jobs.\n", b.ok("bulk-jobs", "list"))

	text = b.ok(append([]string{"bulk-jobs", "create", "--wait", "--poll-interval", "20ms"}, selection...)...)
	require.Contains(t, text, "running: 0% (0 of about 2 hook(s) read, 0 acted on, 0 batch(es))\n")
	require.Contains(t, text, "completed: 100% (2 of about 2 hook(s) read, 2 acted on, 1 batch(es))\n")
	require.Regexp(t, `State:\s+completed\n`, text)

	var page sundial.BulkJobPage
	out := b.ok("bulk-jobs", "list", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	require.Len(t, page.Data, 1)
	job := page.Data[0]
	require.Equal(t, sundial.BulkJobCompleted, job.State)
	require.EqualValues(t, 2, job.Affected)
	require.Equal(t, []string{"campaign:spring"}, job.Selection.Tags)
	require.Regexp(t, `Skipped:\s+0\n`, b.ok("bulk-jobs", "get", job.ID))

	var hooks sundial.HookPage
	out = b.ok("hooks", "list", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &hooks), out)
	require.Len(t, hooks.Data, 2, "the hook outside the range and the untagged one stay")

	res := b.run("", "bulk-jobs", "cancel", job.ID)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "has already ended (completed)")
	require.Contains(t, res.stderr, "409 conflict")
	res = b.run("", append([]string{"bulk-jobs", "create", "--endpoint-key", "spring"}, selection...)...)
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, "--endpoint-key: ")
	require.Contains(t, res.stderr, "400 invalid_request")
}

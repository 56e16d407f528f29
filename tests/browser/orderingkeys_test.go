package browser

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOrderingKeys covers the held ordering keys page: a key whose hook
// the receiver refused, in a project that holds its keys on a final
// failure, is listed with its failed hook; Resume frees it, and the real
// scheduler and dispatcher then deliver the key's next hook.
func TestOrderingKeys(t *testing.T) {
	t.Parallel()
	const failPath, nextPath, key = "/browser/ordered/fail", "/browser/ordered/next", "account/42"
	b := setup(t, options{delivery: true, firstStatus: map[string]int{failPath: http.StatusBadRequest}})
	resp, raw := b.api().Do(t, http.MethodPatch, "/v1/project", map[string]any{
		"orderingOnFailure": "hold",
		// A 400 fails the hook at once.
		"failurePolicy": map[string]any{"4xx": "fail"},
	})
	require.Equal(t, http.StatusOK, resp.StatusCode, "PATCH /v1/project: %s", raw)
	at := time.Now().UTC().Format(time.RFC3339Nano)
	resp, raw = b.api().Do(t, http.MethodPost, "/v1/hooks/batch", map[string]any{"hooks": []map[string]any{
		{"path": failPath, "postAt": at, "data": map[string]any{}, "orderingKey": key},
		{"path": nextPath, "postAt": at, "data": map[string]any{}, "orderingKey": key},
	}})
	require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /v1/hooks/batch: %s", raw)
	var created struct{ Data []hook }
	require.NoError(t, json.Unmarshal(raw, &created))
	failed, next := created.Data[0], created.Data[1]
	b.waitStatus(t, failed.ID, "failed")
	require.Zero(t, b.receiver.Received(nextPath), "the key's next hook waits behind the failed one")

	tb := signedIn(t, b)
	page := b.overviewPath() + "/ordering-keys"
	tb.open(page)
	tb.at("held", page, "#held-keys")
	require.Contains(t, tb.text("#held-keys tbody tr"), key)
	require.Contains(t, tb.text("#held-keys tbody tr"), failed.ID)
	tb.click("#held-keys tbody tr button")
	tb.waitText("#resumed", "Resumed "+key)
	tb.shot("resumed")
	require.Equal(t, "No ordering key is held.", tb.text("#held-keys tbody tr td"))

	b.waitStatus(t, next.ID, "completed")
	require.Equal(t, 1, b.receiver.Received(nextPath))
	require.Equal(t, "failed", b.waitStatus(t, failed.ID, "failed").Status, "the failed hook stays failed")
}

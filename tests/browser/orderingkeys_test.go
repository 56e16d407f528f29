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
// failure, is listed with its failed hook, and a link to the list of the
// key's hooks, which the failed hook's page has too; Resume frees it, and
// the real scheduler and dispatcher then deliver the key's next hook.
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
	later := time.Now().UTC().Add(24 * time.Hour).Format(time.RFC3339Nano)
	resp, raw = b.api().Do(t, http.MethodPost, "/v1/hooks/batch", map[string]any{"hooks": []map[string]any{
		{"path": failPath, "postAt": at, "data": map[string]any{}, "orderingKey": key},
		{"path": nextPath, "postAt": at, "data": map[string]any{}, "orderingKey": key},
		// Another key's hook and one of no key, which the key's list
		// leaves out.
		{"path": "/browser/ordered/other", "postAt": later, "data": map[string]any{}, "orderingKey": "account/7"},
		{"path": "/browser/unordered", "postAt": later, "data": map[string]any{}},
	}})
	require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /v1/hooks/batch: %s", raw)
	var created struct{ Data []hook }
	require.NoError(t, json.Unmarshal(raw, &created))
	failed, next, otherKey, noKey := created.Data[0], created.Data[1], created.Data[2], created.Data[3]
	b.waitStatus(t, failed.ID, "failed")
	require.Zero(t, b.receiver.Received(nextPath), "the key's next hook waits behind the failed one")

	tb := signedIn(t, b)
	page := b.overviewPath() + "/ordering-keys"
	tb.open(page)
	tb.at("held", page, "#held-keys")
	require.Contains(t, tb.text("#held-keys tbody tr"), key)
	require.Contains(t, tb.text("#held-keys tbody tr"), failed.ID)

	// The row's link: the key's hooks, the failed one and the one waiting
	// behind it, and no other.
	hooks := b.overviewPath() + "/hooks"
	keyHooks := func(page string) {
		t.Helper()
		tb.at(page, hooks, "#hook-rows")
		require.Equal(t, key, eval[string](tb, `document.querySelector("#orderingKey").value`), "the filter form keeps the key")
		tb.waitText("#hook-rows", failed.ID)
		rows := tb.text("#hook-rows")
		require.Contains(t, rows, next.ID)
		require.NotContains(t, rows, otherKey.ID)
		require.NotContains(t, rows, noKey.ID)
	}
	tb.click("#held-keys tbody tr a.key-hooks")
	keyHooks("key-hooks-from-held")
	// The failed hook's page links to the same list.
	tb.click(`#hook-rows a[href$="/hooks/` + failed.ID + `"]`)
	tb.at("failed-hook", hooks+"/"+failed.ID, "#hook-ordering-key-hooks")
	tb.click("#hook-ordering-key-hooks")
	keyHooks("key-hooks-from-hook")

	tb.open(page)
	tb.at("held-again", page, "#held-keys")
	tb.click("#held-keys tbody tr button")
	tb.waitText("#resumed", "Resumed "+key)
	tb.shot("resumed")
	require.Equal(t, "No ordering key is held.", tb.text("#held-keys tbody tr td"))

	b.waitStatus(t, next.ID, "completed")
	require.Equal(t, 1, b.receiver.Received(nextPath))
	require.Equal(t, "failed", b.waitStatus(t, failed.ID, "failed").Status, "the failed hook stays failed")
}

package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sequenceRun is the API's view of a run, as far as these tests look.
type sequenceRun struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Steps  []struct {
		Name   string `json:"name"`
		HookID string `json:"hookID"`
		Status string `json:"status"`
	} `json:"steps"`
}

// createSequence creates a sequence whose first slot is a second or two
// away: `every` 1m anchored 58 s ago (the slot 58 s ago is before the
// creation, so the plan starts at the next one).
func (b *bundle) createSequence(t *testing.T, body map[string]any) string {
	t.Helper()
	body["schedule"] = map[string]any{"every": "1m"}
	body["startAt"] = time.Now().Add(-58 * time.Second).UTC().Format(time.RFC3339Nano)
	resp, raw := b.do(t, http.MethodPost, "/v1/sequences", body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /v1/sequences: %s", raw)
	var out struct {
		Data struct {
			ID        string    `json:"id"`
			NextRunAt time.Time `json:"nextRunAt"`
		}
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	require.WithinDuration(t, time.Now().Add(2*time.Second), out.Data.NextRunAt, 3*time.Second)
	return out.Data.ID
}

// firstRun waits until the sequence's latest run has the status.
func (b *bundle) firstRun(t *testing.T, id, status string, within time.Duration) sequenceRun {
	t.Helper()
	var run sequenceRun
	require.Eventually(t, func() bool {
		resp, raw := b.do(t, http.MethodGet, "/v1/sequences/"+id+"/runs?limit=1", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		var out struct{ Data []sequenceRun }
		require.NoError(t, json.Unmarshal(raw, &out))
		if len(out.Data) == 0 {
			return false
		}
		run = out.Data[0]
		return run.Status == status
	}, within, 100*time.Millisecond, "the run never became %s: %+v", status, run)
	return run
}

// A three-step chain through every service: each step's hook is delivered
// only after the one it depends on completed, in order, and the run ends
// completed.
func TestSequenceChainRunsInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	id := b.createSequence(t, map[string]any{
		"name": "etl",
		"steps": []map[string]any{
			{"name": "extract", "path": "/etl/extract", "data": map[string]any{"step": 1}},
			{"name": "transform", "path": "/etl/transform", "data": map[string]any{"step": 2}, "dependsOn": []string{"extract"}},
			{"name": "load", "path": "/etl/load", "data": map[string]any{"step": 3}, "dependsOn": []string{"transform"}},
		},
	})
	run := b.firstRun(t, id, "completed", time.Minute)
	for _, s := range run.Steps {
		require.Equal(t, "completed", s.Status, "step %s", s.Name)
		require.NotEmpty(t, s.HookID)
	}
	got := b.receiver.Received()
	require.Len(t, got, 3)
	var paths []string
	for _, r := range got {
		var body struct {
			Path string `json:"path"`
			Data struct {
				Step int `json:"step"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &body))
		paths = append(paths, body.Path)
	}
	require.Equal(t, []string{"/etl/extract", "/etl/transform", "/etl/load"}, paths)
}

// A step that fails for good skips the steps that depend on it and fails
// the run; a step that does not depend on it still runs.
func TestSequenceFailedStepSkipsItsDependents(t *testing.T) {
	t.Parallel()
	// The receiver fails the first delivery: the root step, which has no
	// retry left (minRetries 0 is not allowed in an override, so the
	// project's policy of no retries is used).
	b := setup(t, options{statuses: []int{500}})
	patch := map[string]any{"retryPolicy": map[string]any{"minRetries": 0}}
	resp, raw := b.do(t, http.MethodPatch, "/v1/project", patch)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	id := b.createSequence(t, map[string]any{
		"name": "fragile",
		"steps": []map[string]any{
			{"name": "first", "path": "/first", "data": map[string]any{}},
			{"name": "second", "path": "/second", "data": map[string]any{}, "dependsOn": []string{"first"}},
			{"name": "third", "path": "/third", "data": map[string]any{}, "dependsOn": []string{"second"}},
		},
	})
	run := b.firstRun(t, id, "failed", time.Minute)
	status := map[string]string{}
	for _, s := range run.Steps {
		status[s.Name] = s.Status
	}
	require.Equal(t, map[string]string{"first": "failed", "second": "skipped", "third": "skipped"}, status)
	require.Len(t, b.receiver.Received(), 1, "the skipped steps were never delivered")
}

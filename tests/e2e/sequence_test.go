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

// A sequence's next run is written ahead of its slot (its root hook is
// listed, due at the slot, and the sequence shows the slot as nextRunAt);
// paused before the slot, the run is withdrawn: the hook goes, and nothing
// is delivered at the slot nor listed as a run.
func TestSequencePausedBeforeItsSlotNeverRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	body := map[string]any{"name": "paused", "schedule": map[string]any{"every": "1m"},
		"startAt": time.Now().Add(-52 * time.Second).UTC().Format(time.RFC3339Nano),
		"steps":   []map[string]any{{"name": "only", "path": "/only", "data": map[string]any{}}}}
	resp, raw := b.do(t, http.MethodPost, "/v1/sequences", body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", raw)
	var created struct {
		Data struct {
			ID        string    `json:"id"`
			NextRunAt time.Time `json:"nextRunAt"`
		}
	}
	require.NoError(t, json.Unmarshal(raw, &created))
	slot := created.Data.NextRunAt
	pending := func() []hook {
		resp, raw := b.do(t, http.MethodGet, "/v1/hooks", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		var out struct{ Data []hook }
		require.NoError(t, json.Unmarshal(raw, &out))
		return out.Data
	}
	require.Eventually(t, func() bool { return len(pending()) == 1 }, 5*time.Second, 50*time.Millisecond,
		"the run is written ahead of its slot")
	root := pending()[0]
	require.True(t, root.PostAt.Equal(slot), "due at the slot: %v, want %v", root.PostAt, slot)
	require.True(t, time.Now().Before(slot), "written before the slot")
	resp, raw = b.do(t, http.MethodGet, "/v1/sequences/"+created.Data.ID, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var shown struct {
		Data struct {
			NextRunAt time.Time `json:"nextRunAt"`
		}
	}
	require.NoError(t, json.Unmarshal(raw, &shown))
	require.True(t, shown.Data.NextRunAt.Equal(slot), "nextRunAt %v, want the slot %v", shown.Data.NextRunAt, slot)

	resp, raw = b.do(t, http.MethodPost, "/v1/sequences/"+created.Data.ID+"/pause", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	require.Eventually(t, func() bool { return len(pending()) == 0 }, 5*time.Second, 50*time.Millisecond,
		"the run written ahead is withdrawn")
	// A plain hook due at the same instant is delivered; the sequence's is
	// not.
	probe := b.schedule(t, map[string]any{"path": "/probe", "data": map[string]any{}, "postAt": slot.Format(time.RFC3339Nano)})
	b.waitStatus(t, probe.ID, "completed", 20*time.Second)
	got := b.receiver.Received()
	require.Len(t, got, 1)
	require.Contains(t, string(got[0].Body), `"/probe"`)
	resp, raw = b.do(t, http.MethodGet, "/v1/sequences/"+created.Data.ID+"/runs", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var runs struct{ Data []sequenceRun }
	require.NoError(t, json.Unmarshal(raw, &runs))
	require.Empty(t, runs.Data)
}

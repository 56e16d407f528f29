package delivery

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
)

// TestSignMatchesSundial checks Sign against vectors of pkg/signing's
// testdata/vectors.json, so the baseline signs exactly as Sundial does.
func TestSignMatchesSundial(t *testing.T) {
	t.Parallel()
	vectors := []struct {
		key       string
		timestamp int64
		body      string
		want      string
	}{
		{"sig_test_active_key", 1700000000, `{"id":"0190b1c2-0000-7000-8000-000000000001","data":{"hello":"world"}}`,
			"v1,b2dced01b71f755eb5a9ed3f90cc6e1090c4bac4ee45c101eee038f0a59fc992"},
		{"k", 0, `{}`, "v1,c847cd2c51e393092098d6126ed5aeb9ddbe946df3a0b7cb9e9a8a34fadb2cc7"},
		{"sig_new_key_after_rotation", 1763700000, `{"data":{"n":1}}`,
			"v1,b2369bd979cb6cd556ab3919a899b9357c9ad0b19737f281e22b211c93c2642a"},
	}
	for _, v := range vectors {
		require.Equal(t, v.want, Sign(v.key, v.timestamp, []byte(v.body)))
	}
}

func TestBodyHasSundialsFields(t *testing.T) {
	t.Parallel()
	postAt := time.Date(2026, 11, 21, 12, 0, 0, 500_000_000, time.FixedZone("x", 3600))
	postedAt := postAt.Add(20 * time.Millisecond)
	raw, err := Body(Args{ID: "id-1", Path: "/a?b=c&d", Payload: json.RawMessage(`{"n":7}`)}, postAt, postedAt)
	require.NoError(t, err)
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &got))
	require.JSONEq(t, `"id-1"`, string(got["id"]))
	require.JSONEq(t, `"/a?b=c&d"`, string(got["path"]))
	require.JSONEq(t, `"2026-11-21T11:00:00.5Z"`, string(got["postAt"]))
	require.JSONEq(t, `"2026-11-21T11:00:00.52Z"`, string(got["postedAt"]))
	require.JSONEq(t, `{"n":7}`, string(got["data"]))
	require.Len(t, got, 5)
}

// A job with a retry delay is due again that long after its failed
// attempt, as a hook's fixed retryOverride; one without keeps river's
// backoff (the zero time).
func TestNextRetry(t *testing.T) {
	t.Parallel()
	w := &Worker{}
	before := time.Now()
	at := w.NextRetry(&river.Job[Args]{Args: Args{RetryDelaySecs: 5}})
	require.False(t, at.Before(before.Add(5*time.Second)))
	require.False(t, at.After(time.Now().Add(5*time.Second)))
	require.True(t, w.NextRetry(&river.Job[Args]{}).IsZero())
}

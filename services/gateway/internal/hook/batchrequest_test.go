package hook_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

func TestBatchRequestNamesEachProblemByIndex(t *testing.T) {
	t.Parallel()
	var r hook.BatchRequest
	require.NoError(t, json.Unmarshal([]byte(`{"hooks":[
		{"path":"/a","data":{},"postIn":"1m"},
		{"path":"a","data":{"s":"xxxxxxxxxxxxxxxxxxxx"},"postIn":"1m"},
		{"path":"b","data":{},"postIn":"0s"}
	]}`), &r))
	_, err := r.Validate(20)
	var invalid *hook.BatchInvalidError
	require.ErrorAs(t, err, &invalid)
	require.True(t, invalid.TooLarge)
	var fields []string
	for _, p := range invalid.Problems {
		fields = append(fields, p.Field)
	}
	require.Equal(t, []string{"hooks[1].data", "hooks[2].path", "hooks[2].postIn"}, fields,
		"a too-large hook is named like the others, and stops its own validation as for a single create")

	b, err := hook.BatchRequest{Hooks: r.Hooks[:1]}.Validate(1 << 20)
	require.NoError(t, err)
	require.Len(t, b.Hooks, 1)
	require.Equal(t, "/a", b.Hooks[0].Path)

	for _, n := range []int{0, hook.MaxBatchHooks + 1} {
		_, err := hook.BatchRequest{Hooks: make([]hook.CreateRequest, n)}.Validate(1 << 20)
		require.ErrorAs(t, err, &invalid)
		require.Equal(t, "hooks", invalid.Problems[0].Field)
		require.False(t, invalid.TooLarge)
	}
}

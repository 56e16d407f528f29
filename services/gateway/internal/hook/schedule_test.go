package hook_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

func TestValidateRetryOverrideJSON(t *testing.T) {
	t.Parallel()
	path, postIn := "/x", "1m"
	req := hook.CreateRequest{Path: &path, Data: json.RawMessage(`{ "a" : 1 }`), PostIn: &postIn}
	require.NoError(t, json.Unmarshal([]byte(`{"minRetries":3,"delaySecs":10,"strategy":"exponential"}`), &req.RetryOverride))
	n, err := req.Validate(1024)
	require.NoError(t, err)
	require.JSONEq(t, `{"minRetries":3,"delaySecs":10,"strategy":"exponential","backoffFactor":2.0,"jitter":false}`, string(n.RetryOverride))
	require.Equal(t, `{"a":1}`, string(n.Data), "data is stored compacted")
	require.Equal(t, time.Minute, n.PostIn)
	require.Nil(t, n.PostAt)

	require.NoError(t, json.Unmarshal([]byte(`{"minRetries":15,"delaySecs":60,"strategy":"fixed","backoffFactor":1.1,"maxDelaySecs":60,"jitter":true}`), &req.RetryOverride))
	n, err = req.Validate(1024)
	require.NoError(t, err)
	require.JSONEq(t, `{"minRetries":15,"delaySecs":60,"strategy":"fixed","backoffFactor":1.1,"maxDelaySecs":60,"jitter":true}`, string(n.RetryOverride))
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	var req hook.CreateRequest
	require.NoError(t, json.Unmarshal([]byte(`{"path":"x","data":[],"postAt":"2030-01-01T00:00:00Z","postIn":"1m","retryOverride":{}}`), &req))
	_, err := req.Validate(1024)
	var invalid *hook.InvalidError
	require.True(t, errors.As(err, &invalid))
	var fields []string
	for _, p := range invalid.Problems {
		fields = append(fields, p.Field)
	}
	require.ElementsMatch(t, []string{"data", "path", "postAt", "postIn",
		"retryOverride.minRetries", "retryOverride.delaySecs", "retryOverride.strategy"}, fields)
}

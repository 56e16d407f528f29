package app_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

// attemptHeadersJSON is what an attempt answers of its headers.
type attemptHeadersJSON struct {
	Attempt                int                 `json:"attempt"`
	StartedAt              string              `json:"startedAt"`
	DurationSeconds        float64             `json:"durationSeconds"`
	Outcome                string              `json:"outcome"`
	StatusCode             int                 `json:"statusCode"`
	RequestHeaders         map[string][]string `json:"requestHeaders"`
	ResponseHeaders        map[string][]string `json:"responseHeaders"`
	RequestHeadersOmitted  *int                `json:"requestHeadersOmitted"`
	ResponseHeadersOmitted *int                `json:"responseHeadersOmitted"`
}

// TestAttemptsShowTheirHeaders: GET /v1/hooks/{id}/attempts answers each
// attempt's recorded headers as objects of name to values, with the lines
// the bounds left out when there were any; an attempt recorded without
// headers (before they were recorded, or with no answer) answers without
// the fields. The contract client checks the answers against the document.
func TestAttemptsShowTheirHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.post(`{"path":"/x","data":{},"postIn":"1h"}`).hook(t)
	id := uuid.MustParse(h.ID)
	require.NoError(t, b.tq.InsertAttemptWithHeadersForTest(b.ctx, storetest.InsertAttemptWithHeadersForTestParams{
		HookID: id, Attempt: 1,
	}))
	require.NoError(t, b.tq.InsertAttemptWithHeadersForTest(b.ctx, storetest.InsertAttemptWithHeadersForTestParams{
		HookID: id, Attempt: 2,
		RequestHeaders:         json.RawMessage(`{"Authorization": ["[redacted]"], "Content-Type": ["application/json"]}`),
		ResponseHeaders:        json.RawMessage(`{"Set-Cookie": ["a=[redacted]", "b=[redacted]"], "X-Cut": ["abc…"]}`),
		ResponseHeadersOmitted: 4,
	}))

	res := b.do(http.MethodGet, "/v1/hooks/"+h.ID+"/attempts", nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	attempts := decodeStrict[struct {
		Data []attemptHeadersJSON `json:"data"`
	}](t, res.body).Data
	require.Len(t, attempts, 2)

	old := attempts[0]
	require.Nil(t, old.RequestHeaders)
	require.Nil(t, old.ResponseHeaders)
	require.Nil(t, old.RequestHeadersOmitted)
	require.Nil(t, old.ResponseHeadersOmitted)
	require.NotContains(t, string(res.body), `"requestHeadersOmitted"`, "a count of 0 is left out")

	recorded := attempts[1]
	require.Equal(t, map[string][]string{"Authorization": {"[redacted]"}, "Content-Type": {"application/json"}},
		recorded.RequestHeaders)
	require.Equal(t, map[string][]string{"Set-Cookie": {"a=[redacted]", "b=[redacted]"}, "X-Cut": {"abc…"}},
		recorded.ResponseHeaders)
	require.Nil(t, recorded.RequestHeadersOmitted)
	require.NotNil(t, recorded.ResponseHeadersOmitted)
	require.Equal(t, 4, *recorded.ResponseHeadersOmitted)
}

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

// TestAttemptsAndHooksShowTheFailureClass: a failed attempt answers its
// class, and its hook the class of its last failure; a success answers
// none.
func TestAttemptsAndHooksShowTheFailureClass(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.post(`{"path":"/x","data":{},"postIn":"1h"}`).hook(t)
	id := uuid.MustParse(h.ID)
	status, errText, class := int32(410), "HTTP 410", "410"
	require.NoError(t, b.tq.InsertFailedAttemptForTest(b.ctx, storetest.InsertFailedAttemptForTestParams{
		HookID: id, StatusCode: &status, Error: &errText, FailureClass: &class,
	}))
	require.NoError(t, b.tq.InsertAttemptWithHeadersForTest(b.ctx, storetest.InsertAttemptWithHeadersForTestParams{
		HookID: id, Attempt: 2,
	}))

	res := b.do(http.MethodGet, "/v1/hooks/"+h.ID+"/attempts", nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var attempts struct {
		Data []struct {
			Outcome      string  `json:"outcome"`
			FailureClass *string `json:"failureClass"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(res.body, &attempts))
	require.Len(t, attempts.Data, 2)
	require.Equal(t, "failure", attempts.Data[0].Outcome)
	require.NotNil(t, attempts.Data[0].FailureClass)
	require.Equal(t, "410", *attempts.Data[0].FailureClass)
	require.Nil(t, attempts.Data[1].FailureClass, "a success has no class")

	res = b.do(http.MethodGet, "/v1/hooks/"+h.ID, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var hook struct {
		Data struct {
			FailureError string `json:"failureError"`
			FailureClass string `json:"failureClass"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(res.body, &hook))
	require.Equal(t, "HTTP 410", hook.Data.FailureError)
	require.Equal(t, "410", hook.Data.FailureClass)
}

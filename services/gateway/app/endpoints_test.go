package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

type endpointJSON struct {
	Domain              string     `json:"domain"`
	State               string     `json:"state"`
	Cause               string     `json:"cause"`
	Reason              string     `json:"reason"`
	PausedAt            *time.Time `json:"pausedAt"`
	PausedUntil         *time.Time `json:"pausedUntil"`
	Probing             *bool      `json:"probing"`
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	LastError           string     `json:"lastError"`
	ResumeRequested     bool       `json:"resumeRequested"`
}

// pauseEndpoint writes what the scheduler writes when domain's breaker opens.
func (b bundle) pauseEndpoint(projectID, domain string) {
	b.t.Helper()
	reason := "10 failures in a row; last: HTTP 503"
	require.NoError(b.t, b.tq.PauseEndpointForTest(b.ctx, storetest.PauseEndpointForTestParams{
		ProjectID: uuid.MustParse(projectID), Domain: domain, Reason: &reason,
	}))
}

func (b bundle) endpoints(mods ...func(*http.Request)) []endpointJSON {
	b.t.Helper()
	res := b.do(http.MethodGet, "/v1/endpoints", nil, mods...)
	require.Equal(b.t, http.StatusOK, res.status, string(res.body))
	var out struct {
		Data []endpointJSON `json:"data"`
	}
	require.NoError(b.t, json.Unmarshal(res.body, &out))
	return out.Data
}

func TestEndpointsShowThePauseAndItsReason(t *testing.T) {
	t.Parallel()
	a := setup(t)
	require.Empty(t, a.endpoints(), "a domain that never failed is not listed")
	a.pauseEndpoint(a.creds.ProjectID, "hooks.example.com")

	list := a.endpoints()
	require.Len(t, list, 1)
	e := list[0]
	require.Equal(t, "hooks.example.com", e.Domain)
	require.Equal(t, "paused", e.State)
	require.Equal(t, "failures", e.Cause)
	require.Equal(t, "10 failures in a row; last: HTTP 503", e.Reason)
	require.Equal(t, 10, e.ConsecutiveFailures)
	require.Equal(t, "HTTP 503", e.LastError)
	require.NotNil(t, e.PausedAt)
	require.Equal(t, 30*time.Second, e.PausedUntil.Sub(*e.PausedAt))
	require.False(t, *e.Probing)
	require.False(t, e.ResumeRequested)

	res := a.do(http.MethodPost, "/v1/endpoints/resume", strings.NewReader(`{"domain":"hooks.example.com"}`))
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	var resumed struct {
		Data endpointJSON `json:"data"`
	}
	require.NoError(t, json.Unmarshal(res.body, &resumed))
	require.True(t, resumed.Data.ResumeRequested, "the scheduler applies it")
	require.Equal(t, "paused", resumed.Data.State)
}

func TestResumeEndpointIsStrict(t *testing.T) {
	t.Parallel()
	a := setup(t)
	resume := func(body string) response {
		return a.do(http.MethodPost, "/v1/endpoints/resume", strings.NewReader(body))
	}
	resume(`{}`).requireError(t, http.StatusBadRequest, "invalid_request", "domain")
	resume(`{"domain":""}`).requireError(t, http.StatusBadRequest, "invalid_request", "domain")
	resume(`{"domain":"`+strings.Repeat("a", 254)+`"}`).requireError(t, http.StatusBadRequest, "invalid_request", "domain")
	resume(`{"domain":"hooks.example.com","path":"/x"}`).requireError(t, http.StatusBadRequest, "invalid_request", "path")
	resume(`{"domain":"nowhere.example.com"}`).requireError(t, http.StatusNotFound, "not_found")
}

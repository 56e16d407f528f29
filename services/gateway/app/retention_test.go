package app_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRetentionDaysThroughTheAPI: GET /v1/project shows retentionDays (30)
// and the plan's bound (90); PATCH sets it within the bound, and a value
// outside it, null or of the wrong type is a 400 naming retentionDays that
// changes nothing.
func TestRetentionDaysThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got := b.do(http.MethodGet, "/v1/project", nil).project(t)
	require.Equal(t, 30, got.RetentionDays)
	require.Equal(t, 90, got.Quota.MaxRetentionDays)

	require.Equal(t, 90, b.patchProject(`{"retentionDays":90}`).project(t).RetentionDays)
	require.Equal(t, 7, b.patchProject(`{"retentionDays":7}`).project(t).RetentionDays)

	for _, body := range []string{
		`{"retentionDays":91}`, `{"retentionDays":0}`, `{"retentionDays":-1}`, `{"retentionDays":3651}`,
		`{"retentionDays":null}`, `{"retentionDays":"30"}`, `{"retentionDays":1.5}`,
	} {
		b.patchProject(body).requireError(t, http.StatusBadRequest, "invalid_request", "retentionDays")
	}
	require.Equal(t, 7, b.do(http.MethodGet, "/v1/project", nil).project(t).RetentionDays, "nothing changed")
}

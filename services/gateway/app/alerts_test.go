package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProjectAlertSettingsDefaultsAndMergePatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.do(http.MethodGet, "/v1/project", nil).project(t)
	require.Equal(t, 120, p.Alerts.GroupWaitSecs)
	require.Equal(t, 900, p.Alerts.FollowUpMinSecs)
	require.Equal(t, 86400, p.Alerts.FollowUpMaxSecs)
	require.Equal(t, []string{}, p.Alerts.OwnerEmails, "an empty list, not null")

	p = b.patchProject(`{"alerts":{"groupWaitSecs":0,"ownerEmails":["owner@example.com","Billing@Example.com"]}}`).project(t)
	require.Equal(t, 0, p.Alerts.GroupWaitSecs)
	require.Equal(t, 900, p.Alerts.FollowUpMinSecs, "left out: kept")
	require.Equal(t, []string{"owner@example.com", "Billing@Example.com"}, p.Alerts.OwnerEmails)

	p = b.patchProject(`{"alerts":{"followUpMinSecs":60,"followUpMaxSecs":60}}`).project(t)
	require.Equal(t, 60, p.Alerts.FollowUpMinSecs)
	require.Equal(t, 60, p.Alerts.FollowUpMaxSecs)
	require.Equal(t, 0, p.Alerts.GroupWaitSecs)
	require.Len(t, p.Alerts.OwnerEmails, 2)

	p = b.patchProject(`{"alerts":{"ownerEmails":[]}}`).project(t)
	require.Equal(t, []string{}, p.Alerts.OwnerEmails, "an empty list clears them")
	require.Equal(t, p, b.do(http.MethodGet, "/v1/project", nil).project(t))
}

func TestProjectAlertSettingsRefuseBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	many := `"a0@example.com"`
	for i := 1; i <= 20; i++ {
		many += `,"a` + strings.Repeat("x", i) + `@example.com"`
	}
	tests := []struct {
		name, body string
		fields     []string
	}{
		{"group wait negative", `{"alerts":{"groupWaitSecs":-1}}`, []string{"alerts.groupWaitSecs"}},
		{"group wait too long", `{"alerts":{"groupWaitSecs":3601}}`, []string{"alerts.groupWaitSecs"}},
		{"follow-up min too long", `{"alerts":{"followUpMinSecs":86401}}`, []string{"alerts.followUpMinSecs"}},
		{"follow-up max too long", `{"alerts":{"followUpMaxSecs":604801}}`, []string{"alerts.followUpMaxSecs"}},
		{"max below min", `{"alerts":{"followUpMinSecs":600,"followUpMaxSecs":300}}`, []string{"alerts.followUpMaxSecs"}},
		{"min above the stored max", `{"alerts":{"followUpMinSecs":86401}}`, []string{"alerts.followUpMinSecs"}},
		{"min above the stored max, in range", `{"alerts":{"followUpMaxSecs":100,"followUpMinSecs":100}}`, nil},
		{"not an address", `{"alerts":{"ownerEmails":["owner@example.com","nobody"]}}`, []string{"alerts.ownerEmails[1]"}},
		{"display name", `{"alerts":{"ownerEmails":["Owner <owner@example.com>"]}}`, []string{"alerts.ownerEmails[0]"}},
		{"twice", `{"alerts":{"ownerEmails":["a@example.com","A@example.com"]}}`, []string{"alerts.ownerEmails[1]"}},
		{"too many", `{"alerts":{"ownerEmails":[` + many + `]}}`, []string{"alerts.ownerEmails"}},
		{"null", `{"alerts":null}`, []string{"alerts"}},
		{"member null", `{"alerts":{"groupWaitSecs":null}}`, []string{"alerts.groupWaitSecs"}},
		{"unknown member", `{"alerts":{"groupWait":10}}`, []string{"alerts.groupWait"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := b.in(t).patchProject(tt.body)
			if tt.fields == nil {
				res.project(t)
				return
			}
			res.requireError(t, http.StatusBadRequest, "invalid_request", tt.fields...)
		})
	}
	p := b.do(http.MethodGet, "/v1/project", nil).project(t)
	require.Equal(t, 100, p.Alerts.FollowUpMinSecs, "only the valid change was made")
	b.patchProject(`{"alerts":{"followUpMinSecs":101}}`).requireError(t, http.StatusBadRequest, "invalid_request", "alerts.followUpMinSecs")
}

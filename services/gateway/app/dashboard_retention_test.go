package app_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/account"
)

// TestDashboardSettingsRetention: the settings page shows retentionDays
// and the plan's bound, sets it, and shows the API's problem next to the
// field for a value over the bound, changing nothing.
func TestDashboardSettingsRetention(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	br := d.signedIn(account.Member)
	settings := d.overviewPath() + "/settings"
	retention := func() any {
		return decodeStrict[struct {
			Data map[string]any `json:"data"`
		}](t, d.do(http.MethodGet, "/v1/project", nil).body).Data["retentionDays"]
	}

	p := br.get(settings)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `name="retentionDays" type="number" value="30"`)
	require.Contains(t, p.body, "at most 90")

	p = br.post(settings, url.Values{"retentionDays": {"45"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.EqualValues(t, 45, retention())

	p = br.post(settings, url.Values{"retentionDays": {"91"}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "must be from 1 to 90")
	require.EqualValues(t, 45, retention(), "nothing changed")
}

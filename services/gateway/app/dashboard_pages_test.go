package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// signedIn is a browser signed in as a new user of role.
func (d dashBundle) signedIn(role account.Role) *browser {
	d.t.Helper()
	u, password := d.user(role)
	br := d.browser()
	require.Equal(d.t, http.StatusSeeOther, br.signIn(u.Email, password).status)
	return br
}

func (d dashBundle) figure(project uuid.UUID, minute time.Time, shard int16, succeeded, failed, async int32, buckets []int64) {
	d.t.Helper()
	require.NoError(d.t, d.tq.InsertDeliveryMinute(d.ctx, storetest.InsertDeliveryMinuteParams{
		ProjectID: project, Minute: minute, Shard: shard, Succeeded: succeeded, Failed: failed, Async: async,
		LatenessBuckets: buckets,
	}))
}

func TestDashboardOverviewSumsTheFigures(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	other, err := app.CreateProject(d.ctx, app.Database{URL: d.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	minute := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	// One minute over two shards: 90 first attempts under 20 ms (bucket 4),
	// 10 under 1 s (bucket 9, a shorter array on the other shard).
	d.figure(d.project, minute, 0, 3, 1, 2, []int64{0, 0, 0, 0, 90})
	d.figure(d.project, minute, 3, 5, 1, 0, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0})
	// Two days ago: in 7d only. Another project's: never.
	d.figure(d.project, minute.Add(-48*time.Hour), 0, 1000, 0, 0, []int64{})
	d.figure(uuid.MustParse(other.ProjectID), minute, 0, 7, 7, 7, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 500})

	br := d.signedIn(account.Viewer)
	p := br.get(d.overviewPath())
	require.Equal(t, http.StatusOK, p.status)
	require.NotEmpty(t, p.header.Get("Content-Security-Policy"))
	require.Contains(t, p.body, `<td id="total-deliveries">12</td>`)
	require.Contains(t, p.body, `<td id="success-rate">80.00 %</td>`)
	require.Contains(t, p.body, `<td id="lateness-p50">≤ 20ms</td>`)
	require.Contains(t, p.body, `<td id="lateness-p99">≤ 1s</td>`)
	require.Contains(t, p.body, "<svg")
	require.Contains(t, p.body, "<details>")
	require.Contains(t, p.body, "8 succeeded, 2 failed, 2 async") // the step's bar title
	require.Contains(t, p.body, "hooks created")                  // quota use

	p = br.get(d.overviewPath() + "?range=7d")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<td id="total-deliveries">1012</td>`)
	require.Contains(t, p.body, `<td id="success-rate">99.80 %</td>`)

	p = br.get(d.overviewPath() + "?range=1h")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<td id="total-deliveries">12</td>`)

	p = br.get(d.overviewPath() + "?range=1y")
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "range")
}

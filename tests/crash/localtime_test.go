package crash

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/testkit/tztest"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
)

// localHook is the API's view of a hook scheduled by wall time.
type localHook struct {
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	PostAt      time.Time `json:"postAt"`
	PostAtLocal string    `json:"postAtLocal"`
	Timezone    string    `json:"timezone"`
	Tzdata      string    `json:"tzdata"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// TestASchedulerWithANewerTZDatabaseMovesLocalTimes: a hook scheduled for
// a wall time half an hour ahead in Mexico City, by a gateway of the
// embedded tz database (UTC-6), is due half an hour ago once a scheduler
// runs a newer release in which the zone is an hour ahead (UTC-5,
// SUNDIAL_TZDATA_FILE): that scheduler moves it and it is delivered at
// once, not at the old instant.
func TestASchedulerWithANewerTZDatabaseMovesLocalTimes(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	b := setup(t, options{})
	mexico, err := calendar.Embedded.Load(tztest.Zone)
	require.NoError(t, err)
	wall := time.Now().Add(30 * time.Minute).In(mexico).Format("2006-01-02T15:04:05")
	created := apiclient.Schedule[localHook](t, b.api(0), map[string]any{"path": "/local", "data": map[string]any{},
		"postAtLocal": wall, "timezone": tztest.Zone})
	require.Equal(t, []string{wall, tztest.Zone, calendar.Embedded.Version}, []string{created.PostAtLocal, created.Timezone, created.Tzdata})

	b.startScheduler(t, map[string]string{"SUNDIAL_TZDATA_FILE": tztest.MovedFile(t), "SUNDIAL_TZDATA_VERSION": tztest.MovedVersion})
	b.startDispatcher(t, 4)
	var got localHook
	require.Eventually(t, func() bool {
		got = b.getLocal(t, created.ID)
		return got.Status == "completed"
	}, 60*time.Second, 50*time.Millisecond, "the moved hook was not delivered")
	require.Equal(t, created.PostAt.Add(-time.Hour), got.PostAt, "the wall time an hour earlier")
	require.Equal(t, tztest.MovedVersion, got.Tzdata)
	require.Equal(t, wall, got.PostAtLocal, "the wall time stays")
	require.True(t, got.UpdatedAt.After(created.UpdatedAt))
	require.Equal(t, 1, b.receiver.Distinct())
	require.True(t, time.Now().Before(created.PostAt), "delivered before the old instant")
}

func (b *bundle) getLocal(t *testing.T, id string) localHook {
	t.Helper()
	resp, raw := b.api(0).Do(t, http.MethodGet, "/v1/hooks/"+id, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var out struct{ Data localHook }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

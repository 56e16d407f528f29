package app_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

// TestDashboardBulkJobs: the page lists the project's jobs with their
// state, progress and counts; a member cancels a running one, which the
// API then shows cancelling; a viewer sees no button and is refused; a
// job that has ended is said so.
func TestDashboardBulkJobs(t *testing.T) {
	t.Parallel()
	d := setupDashboard(t)
	d.jobHooks("pending", 3, jobDay)
	ended := d.waitJob(d.startJob(jobBody("cancel", `,"endpointKey":"/hook"`)).ID, "completed")
	// Another gateway's runner holds this one: it stays running.
	running, err := d.tq.InsertLeasedBulkJobForTest(d.ctx, storetest.InsertLeasedBulkJobForTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: d.project, StartTime: jobDay, EndTime: jobDay.Add(time.Hour), Total: 8,
	})
	require.NoError(t, err)
	page := d.overviewPath() + "/bulk-jobs"
	cancel := page + "/" + running.ID.String() + "/cancel"

	vb := d.signedIn(account.Viewer)
	p := vb.get(page)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `href="`+page+`"`, "the nav links the page")
	require.Regexp(t, `(?s)id="job-`+ended.ID+`".*<td class="state">completed</td>.*100%</td>\s*<td>3</td>\s*<td>3</td>\s*<td>3</td>\s*<td>0</td>`, p.body)
	require.Contains(t, p.body, "<code>/hook</code>")
	require.Regexp(t, `(?s)id="job-`+running.ID.String()+`".*<td class="state">running</td>.*0%</td>\s*<td>8</td>`, p.body)
	require.Contains(t, p.body, "2 in all.")
	require.NotContains(t, p.body, ">Cancel</button>")
	require.Equal(t, http.StatusForbidden, vb.do(http.MethodPost, cancel, url.Values{"csrf": {vb.csrf()}}).status)
	require.Equal(t, "running", d.bulkJob(running.ID.String()).State)

	mb := d.signedIn(account.Member)
	token := mb.csrf()
	p = mb.get(page)
	require.Contains(t, p.body, `action="`+cancel+`"`, "a running job can be cancelled")
	require.NotContains(t, p.body, `action="`+page+"/"+ended.ID+`/cancel"`, "an ended one cannot")
	p = mb.do(http.MethodPost, cancel, url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "cancelling", d.bulkJob(running.ID.String()).State)
	p = mb.get(p.header.Get("Location"))
	require.Contains(t, p.body, "Cancel asked for job <code>"+running.ID.String()+"</code>")
	require.Contains(t, p.body, `<td class="state">cancelling</td>`)

	p = mb.do(http.MethodPost, page+"/"+ended.ID+"/cancel", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusConflict, p.status)
	require.Contains(t, p.body, "has already ended (completed)")
	for _, id := range []string{uuid.NewString(), "nope"} {
		require.Equal(t, http.StatusNotFound, mb.do(http.MethodPost, page+"/"+id+"/cancel", url.Values{"csrf": {token}}).status)
	}
	require.Equal(t, http.StatusBadRequest, mb.get(page+"?cursor=nope").status)
}

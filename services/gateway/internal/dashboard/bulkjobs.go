package dashboard

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/bulkjob"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// BulkJobService lists a project's bulk jobs and cancels one, as GET
// /v1/bulk-jobs and POST /v1/bulk-jobs/{id}/cancel do (*bulkjob.Service).
type BulkJobService interface {
	ListPage(ctx context.Context, projectID uuid.UUID, pg bulkjob.Page) (bulkjob.JobPage, error)
	Cancel(ctx context.Context, projectID, id uuid.UUID) (store.BulkJob, error)
}

// bulkJobsPage is the data of bulk-jobs.html.
type bulkJobsPage struct {
	bulkjob.JobPage
	// Cancelled is the job a cancel just asked to stop, for the message.
	Cancelled string
	// Problem is why a cancel was refused.
	Problem string
}

// bulkJobs is GET /dashboard/p/{project}/bulk-jobs: the project's jobs,
// newest first, paged with the API's cursor (?cursor=).
func (d *Dashboard) bulkJobs(w http.ResponseWriter, r *http.Request) {
	d.renderBulkJobs(w, r, http.StatusOK, bulkJobsPage{Cancelled: r.URL.Query().Get("cancelled")})
}

func (d *Dashboard) renderBulkJobs(w http.ResponseWriter, r *http.Request, status int, page bulkJobsPage) {
	p, _ := ProjectFrom(r)
	var cursor *string
	if c := r.URL.Query().Get("cursor"); c != "" {
		cursor = &c
	}
	pg, err := bulkjob.ValidPage(nil, cursor)
	if err == nil {
		page.JobPage, err = d.BulkJobs.ListPage(r.Context(), p.ID, pg)
	}
	var bad *bulk.InvalidError
	switch {
	case errors.As(err, &bad):
		Error(w, r, http.StatusBadRequest, "cursor: not a cursor of this list; start from the first page.")
		return
	case err != nil:
		d.fault(w, r, "list bulk jobs", err)
		return
	}
	RenderStatus(w, r, status, "bulk-jobs.html", page)
}

// cancelBulkJob is POST /dashboard/p/{project}/bulk-jobs/{id}/cancel
// (members and owners): the job is asked to stop before its next batch,
// then back to the list, which says so; a job that has ended is the list
// again with why.
func (d *Dashboard) cancelBulkJob(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		Error(w, r, http.StatusNotFound, "There is no such bulk job in this project.")
		return
	}
	_, err = d.BulkJobs.Cancel(r.Context(), p.ID, id)
	var finished *bulkjob.FinishedError
	switch {
	case errors.Is(err, bulkjob.ErrNotFound):
		Error(w, r, http.StatusNotFound, "There is no such bulk job in this project.")
		return
	case errors.As(err, &finished):
		d.renderBulkJobs(w, r, http.StatusConflict, bulkJobsPage{Problem: "Job " + id.String() + ": " + finished.Error() + "."})
		return
	case err != nil:
		d.fault(w, r, "cancel bulk job", err)
		return
	}
	d.Log.Info("dashboard bulk job cancelled", "project_id", p.ID, "user_id", sessionFrom(r).user.ID, "job", id)
	http.Redirect(w, r, Prefix+"/p/"+p.ID.String()+"/bulk-jobs?cancelled="+id.String(), http.StatusSeeOther)
}

package dashboard

import (
	"errors"
	"net/http"

	"github.com/sundial-run/sundial/services/gateway/internal/project"
)

// projectList is GET /dashboard: the user's projects, or straight to the
// overview of the only one.
func (d *Dashboard) projectList(w http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r)
	if len(s.projects) == 1 {
		http.Redirect(w, r, Prefix+"/p/"+s.projects[0].ID.String(), http.StatusSeeOther)
		return
	}
	Render(w, r, "projects.html", nil)
}

// overviewPage is the data of overview.html. The plots of
// docs/dashboard.md ("Figures") are still to come.
type overviewPage struct {
	PlanQuota, HooksCreated int64
	Percent                 int64
	// High is where the meter turns to a warning: 75 % of the quota.
	High  int64
	Error string
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	d.renderOverview(w, r, http.StatusOK, "")
}

func (d *Dashboard) renderOverview(w http.ResponseWriter, r *http.Request, status int, problem string) {
	p, _ := ProjectFrom(r)
	u, err := d.Usage.GetProjectUsage(r.Context(), p.ID)
	if err != nil {
		d.fault(w, r, "project usage", err)
		return
	}
	page := overviewPage{PlanQuota: u.PlanQuota, HooksCreated: u.HooksCreated, High: u.PlanQuota * 3 / 4, Error: problem}
	if u.PlanQuota > 0 {
		page.Percent = u.HooksCreated * 100 / u.PlanQuota
	}
	RenderStatus(w, r, status, "overview.html", page)
}

// rename is POST /dashboard/p/{project}/settings with a new name, the
// foundation's one mutating project route (members and owners).
func (d *Dashboard) rename(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	_, err := d.Settings.Update(r.Context(), p.ID, project.Patch{Name: project.Value(r.PostFormValue("name"))})
	var invalid *project.InvalidSettingsError
	switch {
	case errors.As(err, &invalid) || errors.Is(err, project.ErrInvalid):
		d.renderOverview(w, r, http.StatusBadRequest, err.Error())
	case err != nil:
		d.fault(w, r, "rename project", err)
	default:
		d.Log.Info("dashboard project renamed", "project_id", p.ID, "user_id", sessionFrom(r).user.ID)
		http.Redirect(w, r, Prefix+"/p/"+p.ID.String(), http.StatusSeeOther)
	}
}

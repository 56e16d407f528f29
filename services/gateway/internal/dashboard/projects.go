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

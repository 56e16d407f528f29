package dashboard

import (
	"net/http"
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

package dashboard

import (
	"net/http"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// listenersPage is the data of listeners.html: the presence rows and the
// project's state read from them (docs/listener.md): listening when a row
// is live, else holding when a resume window is still open, else neither.
type listenersPage struct {
	Rows      []store.ListProjectPresenceRow
	Listening bool
	Holding   bool
	Held      int64
}

// listeners is GET /dashboard/p/{project}/listeners, read-only.
func (d *Dashboard) listeners(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	rows, err := d.Admin.Presence.ListProjectPresence(r.Context(), p.ID)
	if err != nil {
		d.fault(w, r, "listener presence", err)
		return
	}
	held, err := d.Admin.Presence.CountProjectHeldHooks(r.Context(), p.ID)
	if err != nil {
		d.fault(w, r, "held hooks", err)
		return
	}
	page := listenersPage{Rows: rows, Held: held}
	windowOpen := false
	for _, row := range rows {
		page.Listening = page.Listening || row.Live
		windowOpen = windowOpen || row.WindowOpen
	}
	page.Holding = !page.Listening && windowOpen
	Render(w, r, "listeners.html", page)
}

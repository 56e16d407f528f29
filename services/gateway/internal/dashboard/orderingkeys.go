package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/orderingkey"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
)

// OrderingKeyService lists a project's held ordering keys and resumes one,
// as GET /v1/ordering-keys?held=true and POST
// /v1/ordering-keys/{key}/resume do (*orderingkey.Service).
type OrderingKeyService interface {
	ListHeld(ctx context.Context, projectID uuid.UUID, pg orderingkey.Page) (orderingkey.HeldPage, error)
	Resume(ctx context.Context, projectID uuid.UUID, key string) (orderingkey.Key, error)
}

// orderingKeysPage is the data of ordering-keys.html.
type orderingKeysPage struct {
	orderingkey.HeldPage
	// Hold says the project holds its keys on a final failure (else none
	// is ever held).
	Hold bool
	// Resumed is the key a resume just freed, for the message.
	Resumed string
	// Problem is why a resume was refused.
	Problem string
}

// orderingKeys is GET /dashboard/p/{project}/ordering-keys: the held keys,
// paged with the API's cursor (?cursor=).
func (d *Dashboard) orderingKeys(w http.ResponseWriter, r *http.Request) {
	d.renderOrderingKeys(w, r, http.StatusOK, orderingKeysPage{Resumed: r.URL.Query().Get("resumed")})
}

func (d *Dashboard) renderOrderingKeys(w http.ResponseWriter, r *http.Request, status int, page orderingKeysPage) {
	p, _ := ProjectFrom(r)
	var cursor *string
	if c := r.URL.Query().Get("cursor"); c != "" {
		cursor = &c
	}
	pg, err := orderingkey.ValidPage(nil, cursor)
	if err == nil {
		page.HeldPage, err = d.OrderingKeys.ListHeld(r.Context(), p.ID, pg)
	}
	var bad *orderingkey.InvalidError
	switch {
	case errors.As(err, &bad):
		Error(w, r, http.StatusBadRequest, "cursor: not a cursor of this list; start from the first page.")
		return
	case err != nil:
		d.fault(w, r, "list held ordering keys", err)
		return
	}
	settings, err := d.Admin.Project.Get(r.Context(), p.ID)
	if err != nil {
		d.fault(w, r, "project settings", err)
		return
	}
	page.Hold = settings.OrderingOnFailure == project.OrderingHold
	RenderStatus(w, r, status, "ordering-keys.html", page)
}

// resumeOrderingKey is POST /dashboard/p/{project}/ordering-keys/resume
// (members and owners), the form's key: freed, then back to the list,
// which says so; a key that is not held is the list again with why.
func (d *Dashboard) resumeOrderingKey(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	key := r.PostFormValue("key")
	if err := hook.ValidateKey(key); err != nil {
		d.renderOrderingKeys(w, r, http.StatusBadRequest, orderingKeysPage{Problem: "key: " + err.Error()})
		return
	}
	_, err := d.OrderingKeys.Resume(r.Context(), p.ID, key)
	var notHeld *orderingkey.NotHeldError
	switch {
	case errors.Is(err, orderingkey.ErrNotFound):
		d.renderOrderingKeys(w, r, http.StatusNotFound, orderingKeysPage{Problem: "There is no such ordering key in this project."})
		return
	case errors.As(err, &notHeld):
		d.renderOrderingKeys(w, r, http.StatusConflict, orderingKeysPage{Problem: "Key " + key + ": " + notHeld.Error() + "."})
		return
	case err != nil:
		d.fault(w, r, "resume ordering key", err)
		return
	}
	d.Log.Info("dashboard ordering key resumed", "project_id", p.ID, "user_id", sessionFrom(r).user.ID)
	http.Redirect(w, r, Prefix+"/p/"+p.ID.String()+"/ordering-keys?resumed="+url.QueryEscape(key), http.StatusSeeOther)
}

package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/signingkey"
)

// keysPage is the data of keys.html. NewKey is set only on the answer to
// the create that made it: the one time its value is ever shown.
type keysPage struct {
	APIKeys     []apikey.Info
	SigningKeys []signingkey.Key
	NewKey      *apikey.Created
	// Field and Error: a problem with one form's input, shown next to it.
	Field, Error string
	// GraceHours is the rotate form's default grace period.
	GraceHours int
}

// keys is GET /dashboard/p/{project}/keys.
func (d *Dashboard) keys(w http.ResponseWriter, r *http.Request) {
	d.renderKeys(w, r, http.StatusOK, keysPage{})
}

func (d *Dashboard) renderKeys(w http.ResponseWriter, r *http.Request, status int, page keysPage) {
	p, _ := ProjectFrom(r)
	var err error
	if page.APIKeys, err = d.Admin.APIKeys.List(r.Context(), p.ID); err != nil {
		d.fault(w, r, "list API keys", err)
		return
	}
	if page.SigningKeys, err = d.Admin.SigningKeys.List(r.Context(), p.ID); err != nil {
		d.fault(w, r, "list signing keys", err)
		return
	}
	page.GraceHours = int(signingkey.DefaultGrace.Hours())
	RenderStatus(w, r, status, "keys.html", page)
}

// createAPIKey is POST /dashboard/p/{project}/keys/api (owners): the
// answer is the keys page with the new key, not a redirect, so that the
// key is in this one response only.
func (d *Dashboard) createAPIKey(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	created, err := d.Admin.APIKeys.Create(r.Context(), p.ID, r.PostFormValue("name"))
	var bad *apikey.NameError
	switch {
	case errors.As(err, &bad):
		d.renderKeys(w, r, http.StatusBadRequest, keysPage{Field: "name", Error: bad.Message})
	case err != nil:
		d.fault(w, r, "create API key", err)
	default:
		d.Log.Info("dashboard API key created", "project_id", p.ID, "key_id", created.ID, "user_id", sessionFrom(r).user.ID)
		d.renderKeys(w, r, http.StatusCreated, keysPage{NewKey: &created})
	}
}

// revokeAPIKey is POST /dashboard/p/{project}/keys/api/{id}/revoke (owners).
func (d *Dashboard) revokeAPIKey(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		Error(w, r, http.StatusNotFound, "There is no such API key in this project.")
		return
	}
	err = d.Admin.APIKeys.Revoke(r.Context(), p.ID, id)
	// As the API's revocation: forget the key here at once, also after a
	// failure (it may have committed), unless nothing was revoked.
	if !errors.Is(err, postgres.ErrNotFound) && !errors.Is(err, apikey.ErrLastKey) {
		d.Admin.KeyCache.Forget(id)
	}
	switch {
	case errors.Is(err, postgres.ErrNotFound):
		Error(w, r, http.StatusNotFound, "There is no such API key in this project.")
	case errors.Is(err, apikey.ErrLastKey):
		d.renderKeys(w, r, http.StatusConflict, keysPage{Field: "api", Error: apikey.ErrLastKey.Error()})
	case err != nil:
		d.fault(w, r, "revoke API key", err)
	default:
		d.Log.Info("dashboard API key revoked", "project_id", p.ID, "key_id", id, "user_id", sessionFrom(r).user.ID)
		http.Redirect(w, r, Prefix+"/p/"+p.ID.String()+"/keys", http.StatusSeeOther)
	}
}

// rotateSigningKey is POST /dashboard/p/{project}/keys/signing/rotate
// (owners) with grace_hours, checked by signingkey.Grace as the API's
// gracePeriodSecs.
func (d *Dashboard) rotateSigningKey(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	grace, err := graceHours(r.PostFormValue("grace_hours"))
	if err != nil {
		d.renderKeys(w, r, http.StatusBadRequest, keysPage{Field: "grace_hours", Error: "must be a whole number of hours from 1 to 168 (7 days)"})
		return
	}
	if _, err := d.Admin.SigningKeys.Rotate(r.Context(), p.ID, grace); err != nil {
		d.fault(w, r, "rotate signing key", err)
		return
	}
	d.Log.Info("dashboard signing key rotated", "project_id", p.ID, "grace", grace, "user_id", sessionFrom(r).user.ID)
	http.Redirect(w, r, Prefix+"/p/"+p.ID.String()+"/keys", http.StatusSeeOther)
}

// revokeSigningKey is POST /dashboard/p/{project}/keys/signing/{id}/revoke
// (owners): a retiring key only.
func (d *Dashboard) revokeSigningKey(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		Error(w, r, http.StatusNotFound, "There is no such signing key in this project.")
		return
	}
	err = d.Admin.SigningKeys.Revoke(r.Context(), p.ID, id)
	switch {
	case errors.Is(err, postgres.ErrNotFound):
		Error(w, r, http.StatusNotFound, "There is no such signing key in this project.")
	case errors.Is(err, signingkey.ErrActive):
		d.renderKeys(w, r, http.StatusConflict, keysPage{Field: "signing", Error: signingkey.ErrActive.Error()})
	case err != nil:
		d.fault(w, r, "revoke signing key", err)
	default:
		d.Log.Info("dashboard signing key revoked", "project_id", p.ID, "key_id", id, "user_id", sessionFrom(r).user.ID)
		http.Redirect(w, r, Prefix+"/p/"+p.ID.String()+"/keys", http.StatusSeeOther)
	}
}

// graceHours reads the rotate form's grace period, in hours, and checks it
// as the API's gracePeriodSecs.
func graceHours(v string) (time.Duration, error) {
	hours, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("grace_hours: %w", err)
	}
	if hours < 1 || hours > 24*7 { // before multiplying: no overflow
		return 0, signingkey.ErrInvalidGrace
	}
	secs := hours * 3600
	return signingkey.Grace(&secs)
}

package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
)

// The form's choices of when a hook is due: the API's three ways
// (postAt, postAtLocal with timezone, postIn), and now.
const (
	whenNow   = "now"
	whenAt    = "postAt"
	whenLocal = "postAtLocal"
	whenIn    = "postIn"
)

// hookFormFields are the fields of hook-new.html that problems are shown
// next to, named as the API's.
var hookFormFields = []string{"path", "data", "when", "postAt", "postAtLocal", "timezone", "postIn"}

// testDeliveryData is the payload of a test delivery: what it is, in
// words for whoever reads the receiver's log.
var testDeliveryData = json.RawMessage(`{"type":"sundial.test","message":"A test delivery from the Sundial dashboard."}`)

// hookForm is the data of hook-new.html: the form's values as given, and
// its problems by field.
type hookForm struct {
	Path, Data, When, PostAt, PostAtLocal, Timezone, PostIn string
	Errors                                                  formProblems
	// Test says that the form is a refused test delivery's, to correct.
	Test bool
	// MaxDataKiB is the largest data the form takes.
	MaxDataKiB int
}

// newHookForm is GET /dashboard/p/{project}/hooks/new: the form, due now,
// with empty data (viewers see it disabled).
func (d *Dashboard) newHookForm(w http.ResponseWriter, r *http.Request) {
	d.renderHookForm(w, r, http.StatusOK, hookForm{Path: "/", Data: "{}", When: whenNow})
}

func (d *Dashboard) renderHookForm(w http.ResponseWriter, r *http.Request, status int, f hookForm) {
	f.MaxDataKiB = min(d.Config.MaxDataBytes, maxFormBytes) >> 10
	RenderStatus(w, r, status, "hook-new.html", f)
}

// createHook is POST /dashboard/p/{project}/hooks (members and owners):
// the form as a POST /v1/hooks request, validated and created by the
// API's code; then 303 to the new hook's page.
func (d *Dashboard) createHook(w http.ResponseWriter, r *http.Request) {
	f := hookForm{
		Path: strings.TrimSpace(r.PostFormValue("path")), Data: r.PostFormValue("data"), When: r.PostFormValue("when"),
		PostAt: strings.TrimSpace(r.PostFormValue("postAt")), PostAtLocal: strings.TrimSpace(r.PostFormValue("postAtLocal")),
		Timezone: strings.TrimSpace(r.PostFormValue("timezone")), PostIn: strings.TrimSpace(r.PostFormValue("postIn")),
	}
	req, problems := f.request(time.Now())
	d.schedule(w, r, req, problems, f)
}

// sendTestDelivery is POST /dashboard/p/{project}/hooks/test (members and
// owners): a hook due now to the path given ("/" when none) with
// testDeliveryData, created as the form's; then its page, which shows
// its attempt when it is made (docs/dashboard.md, "Test delivery").
func (d *Dashboard) sendTestDelivery(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSpace(r.PostFormValue("path"))
	if path == "" {
		path = "/"
	}
	f := hookForm{Path: path, Data: string(testDeliveryData), When: whenNow, Test: true}
	req, problems := f.request(time.Now())
	d.schedule(w, r, req, problems, f)
}

// request is the form as the body of POST /v1/hooks, and the problems of
// reading it. Now is postAt the present instant: an instant past by the
// time the hook is stored is due at once, as the API says of postAt.
func (f hookForm) request(now time.Time) (hook.CreateRequest, formProblems) {
	problems := formProblems{}
	req := hook.CreateRequest{Path: &f.Path}
	problems.decodeJSON(hookFormFields, "data", f.Data, &req.Data)
	switch f.When {
	case whenNow:
		at := now.UTC().Format(time.RFC3339Nano)
		req.PostAt = &at
	case whenAt:
		req.PostAt = &f.PostAt
	case whenLocal:
		req.PostAtLocal, req.Timezone = &f.PostAtLocal, &f.Timezone
	case whenIn:
		req.PostIn = &f.PostIn
	default:
		problems.place(hookFormFields, "when", "choose now, an instant, a local time in a zone, or a delay")
	}
	return req, problems
}

// schedule validates req as POST /v1/hooks does and creates the hook
// through the API's service, then sends the browser to its page; a
// refusal shows the form again with the problems by field.
func (d *Dashboard) schedule(w http.ResponseWriter, r *http.Request, req hook.CreateRequest, problems formProblems, f hookForm) {
	p, _ := ProjectFrom(r)
	refuse := func(status int, service formProblems) {
		f.Errors = problems.merge(service)
		d.renderHookForm(w, r, status, f)
	}
	n, err := req.Validate(d.Config.MaxDataBytes)
	var (
		invalid  *hook.InvalidError
		tooLarge *hook.TooLargeError
	)
	switch {
	case errors.As(err, &tooLarge):
		refuse(http.StatusRequestEntityTooLarge, formProblems{"data": "data: " + tooLarge.Error()})
		return
	case errors.As(err, &invalid):
		service := formProblems{}
		for _, pr := range invalid.Problems {
			service.place(hookFormFields, pr.Field, pr.Message)
		}
		refuse(http.StatusBadRequest, service)
		return
	case err != nil:
		d.fault(w, r, "validate hook", err)
		return
	case len(problems) > 0:
		refuse(http.StatusBadRequest, nil)
		return
	}
	h, usage, err := d.Creator.Create(r.Context(), p.ID, n)
	var exhausted *quota.ExhaustedError
	switch {
	case errors.As(err, &exhausted):
		refuse(http.StatusTooManyRequests, formProblems{"": fmt.Sprintf(
			"The project's hook quota is exhausted for this billing period (%d of %d hooks, hard cap %d); it resets at %s. Nothing was created.",
			usage.Used, usage.Limit, usage.HardCap, usage.ResetsAt.UTC().Format(time.RFC3339))})
		return
	case err != nil:
		d.fault(w, r, "create hook", err)
		return
	}
	d.Log.Info("dashboard hook created", "project_id", p.ID, "user_id", sessionFrom(r).user.ID, "hook_id", h.ID, "test", f.Test)
	http.Redirect(w, r, createdHookPath(p.ID, h.ID), http.StatusSeeOther)
}

// createdParam marks the page of a hook just created: it says so, and
// follows the hook until its first attempt when it is due now.
const createdParam = "created"

func createdHookPath(projectID, hookID uuid.UUID) string {
	return Prefix + "/p/" + projectID.String() + "/hooks/" + hookID.String() + "?" + createdParam + "=1"
}

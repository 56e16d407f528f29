package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/attempt"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

// hookPage is the data of hook.html.
type hookPage struct {
	Hook hook.Hook
	// Data and SequenceData are pretty-printed JSON, shown as text.
	Data, RetryOverride string
	Attempts            []attemptView
	// HasHeaders: an attempt recorded headers (docs/choices.md, "Attempt
	// headers"); the page shows them under the attempts.
	HasHeaders bool
	// Done is the action just taken and how many hooks it affected.
	Done     string
	Affected string
	// Created says that the hook was just created here; Follow, when it is
	// due now and has no attempt yet, is the address the page polls until
	// its first attempt shows.
	Created bool
	Follow  string
}

// followFor is how far ahead a hook just created may be due for its page
// to follow it until its first attempt: one due later is not waited for.
const followFor = time.Minute

// attemptView is an attempt with its ack body pretty-printed, and its
// headers as the page shows them: the request's, then the answer's; none
// when it recorded neither.
type attemptView struct {
	attempt.Attempt
	Ack     string
	Headers []headerSide
}

// headerSide is one side of an attempt's headers: a table of Class, titled
// Title, with the lines the bounds left out, saying None when empty.
type headerSide struct {
	Title, Class, None string
	Headers            map[string][]string
	Omitted            int32
}

func viewAttempt(a attempt.Attempt) attemptView {
	v := attemptView{Attempt: a, Ack: pretty(a.AckBody)}
	if a.RequestHeaders != nil || a.ResponseHeaders != nil {
		v.Headers = []headerSide{
			{Title: "Request", Class: "request-headers", None: "None recorded.", Headers: a.RequestHeaders, Omitted: a.RequestHeadersOmitted},
			{Title: "Response", Class: "response-headers", None: "No answer.", Headers: a.ResponseHeaders, Omitted: a.ResponseHeadersOmitted},
		}
	}
	return v
}

// hookDetail is GET /dashboard/p/{project}/hooks/{id}: every field of the
// hook (GET /v1/hooks/{id}) and every attempt (GET /v1/hooks/{id}/attempts),
// through the services the API uses.
func (d *Dashboard) hookDetail(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		Error(w, r, http.StatusNotFound, "There is no such hook.")
		return
	}
	h, err := d.Hook.Get(r.Context(), p.ID, id)
	if errors.Is(err, hook.ErrNotFound) {
		Error(w, r, http.StatusNotFound, "There is no such hook.")
		return
	}
	if err != nil {
		d.fault(w, r, "get hook", err)
		return
	}
	rows, err := d.Attempts.List(r.Context(), p.ID, id)
	if err != nil {
		d.fault(w, r, "list attempts", err)
		return
	}
	page := hookPage{Hook: h, Data: pretty(h.Data), RetryOverride: pretty(h.RetryOverride)}
	for _, a := range rows {
		v := viewAttempt(a)
		page.Attempts = append(page.Attempts, v)
		page.HasHeaders = page.HasHeaders || v.Headers != nil
	}
	if done := bulk.Action(r.URL.Query().Get("done")); done.Valid() {
		page.Done, page.Affected = string(done), r.URL.Query().Get("n")
	}
	if page.Created = r.URL.Query().Get(createdParam) != ""; page.Created && len(rows) == 0 && h.PostAt.Before(time.Now().Add(followFor)) {
		page.Follow = createdHookPath(p.ID, h.ID)
	}
	Render(w, r, "hook.html", page)
}

// pretty indents JSON for reading; anything else is shown as it is.
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// hookAction is POST /dashboard/p/{project}/hooks/{id}/{action}: retry,
// replay or cancel one hook, through the bulk service by id, as the API's
// bulk endpoints with hookIDs do.
func (d *Dashboard) hookAction(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	action := bulk.Action(r.PathValue("action"))
	id, err := uuid.Parse(r.PathValue("id"))
	if !action.Valid() || err != nil {
		Error(w, r, http.StatusNotFound, "There is no such action.")
		return
	}
	// The bulk service skips ids that are not the project's; a page for
	// people says so instead.
	switch _, err := d.Hook.Get(r.Context(), p.ID, id); {
	case errors.Is(err, hook.ErrNotFound):
		Error(w, r, http.StatusNotFound, "There is no such hook.")
		return
	case err != nil:
		d.fault(w, r, "get hook", err)
		return
	}
	res, err := d.Bulk.Run(r.Context(), p.ID, action, bulk.Order{Selection: bulk.Selection{IDs: []uuid.UUID{id}}})
	if d.bulkFailed(w, r, err) {
		return
	}
	n := res.Affected
	d.Log.Info("dashboard hook action", "project_id", p.ID, "user_id", sessionFrom(r).user.ID,
		"hook_id", id, "action", action, "affected", n)
	target := Prefix + "/p/" + p.ID.String() + "/hooks/" + id.String()
	if action == bulk.ActionCancel && n > 0 {
		target = Prefix + "/p/" + p.ID.String() + "/hooks" // the hook is gone
	}
	http.Redirect(w, r, target+"?done="+string(action)+"&n="+strconv.FormatInt(n, 10), http.StatusSeeOther)
}

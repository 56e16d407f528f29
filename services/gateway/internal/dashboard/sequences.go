package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/services/gateway/internal/sequence"
)

// SequenceManager creates, reads, replaces, pauses, resumes and triggers
// sequences (*sequence.Service, as the API's /v1/sequences).
type SequenceManager interface {
	Create(ctx context.Context, projectID uuid.UUID, d sequence.Definition) (sequence.Sequence, error)
	Replace(ctx context.Context, projectID, id uuid.UUID, d sequence.Definition) (sequence.Sequence, error)
	Get(ctx context.Context, projectID, id uuid.UUID) (sequence.Sequence, error)
	List(ctx context.Context, projectID uuid.UUID, pg sequence.Page) (sequence.ListPage, error)
	Pause(ctx context.Context, projectID, id uuid.UUID) (sequence.Sequence, error)
	Resume(ctx context.Context, projectID, id uuid.UUID) (sequence.Sequence, error)
	Trigger(ctx context.Context, projectID, id uuid.UUID) (sequence.Trigger, error)
	Runs(ctx context.Context, projectID, id uuid.UUID, pg sequence.Page) (sequence.RunPage, error)
	Preview(ctx context.Context, projectID, id uuid.UUID, count int) ([]time.Time, error)
}

// sequenceRunsShown is how many runs a sequence's page shows, newest first.
const sequenceRunsShown = 20

// sequencesPage is the data of sequences.html.
type sequencesPage struct {
	sequence.ListPage
}

// sequencePage is the data of sequence.html.
type sequencePage struct {
	Sequence sequence.Sequence
	// Schedule is the schedule as the API shows it (JSON); Described says
	// it in words.
	Schedule, Described string
	// Zone is the schedule's own (UTC for an every schedule), which the
	// next runs are shown in.
	Zone     *time.Location
	NextRuns []time.Time
	Runs     sequence.RunPage
}

// sequences is GET /dashboard/p/{project}/sequences, paged with the API's
// cursor (?cursor=).
func (d *Dashboard) sequences(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	var cursor *string
	if c := r.URL.Query().Get("cursor"); c != "" {
		cursor = &c
	}
	pg, err := sequence.ValidPage(nil, cursor, nil)
	if err == nil {
		var list sequence.ListPage
		list, err = d.Admin.Sequences.List(r.Context(), p.ID, pg)
		if err == nil {
			Render(w, r, "sequences.html", sequencesPage{ListPage: list})
			return
		}
	}
	var bad *sequence.InvalidError
	if errors.As(err, &bad) {
		Error(w, r, http.StatusBadRequest, "cursor: not a cursor of this list; start from the first page.")
		return
	}
	d.fault(w, r, "list sequences", err)
}

// sequence is GET /dashboard/p/{project}/sequences/{id}: the definition,
// the next runs (GET /v1/sequences/{id}/preview) and the latest runs with
// their steps (GET /v1/sequences/{id}/runs).
func (d *Dashboard) sequence(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	id, ok := d.sequenceID(w, r)
	if !ok {
		return
	}
	s, err := d.Admin.Sequences.Get(r.Context(), p.ID, id)
	if err != nil {
		d.sequenceError(w, r, "get sequence", err)
		return
	}
	schedule, err := json.Marshal(s.Spec) // as the API's "schedule"
	if err != nil {
		d.fault(w, r, "sequence schedule", err)
		return
	}
	page := sequencePage{Sequence: s, Schedule: string(schedule), Described: string(schedule), Zone: time.UTC}
	if c, err := calendar.New(s.Spec); err == nil { // stored, so checked: err is nil
		page.Described = c.Describe()
		if c.Location() != nil {
			page.Zone = c.Location()
		}
	}
	count, _ := sequence.ValidCount(nil) // the default count
	if page.NextRuns, err = d.Admin.Sequences.Preview(r.Context(), p.ID, id, count); err != nil {
		d.sequenceError(w, r, "preview sequence", err)
		return
	}
	if page.Runs, err = d.Admin.Sequences.Runs(r.Context(), p.ID, id, sequence.Page{Limit: sequenceRunsShown}); err != nil {
		d.sequenceError(w, r, "sequence runs", err)
		return
	}
	Render(w, r, "sequence.html", page)
}

// sequenceAction is POST /dashboard/p/{project}/sequences/{id}/{action}
// (members and owners): pause, resume or trigger, then back to the
// sequence.
func (d *Dashboard) sequenceAction(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	id, ok := d.sequenceID(w, r)
	if !ok {
		return
	}
	var err error
	action := r.PathValue("action")
	switch action {
	case "pause":
		_, err = d.Admin.Sequences.Pause(r.Context(), p.ID, id)
	case "resume":
		_, err = d.Admin.Sequences.Resume(r.Context(), p.ID, id)
	case "trigger":
		_, err = d.Admin.Sequences.Trigger(r.Context(), p.ID, id)
	default:
		Error(w, r, http.StatusNotFound, "There is no such action.")
		return
	}
	if err != nil {
		d.sequenceError(w, r, action+" sequence", err)
		return
	}
	d.Log.Info("dashboard sequence "+action, "project_id", p.ID, "sequence_id", id, "user_id", sessionFrom(r).user.ID)
	http.Redirect(w, r, Prefix+"/p/"+p.ID.String()+"/sequences/"+id.String(), http.StatusSeeOther)
}

func (d *Dashboard) sequenceID(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		Error(w, r, http.StatusNotFound, "There is no such sequence in this project.")
		return uuid.Nil, false
	}
	return id, true
}

// sequenceError answers the sequence package's errors as the API does:
// not found is a 404, a change the package refuses a 400 naming why.
func (d *Dashboard) sequenceError(w http.ResponseWriter, r *http.Request, what string, err error) {
	var bad *sequence.InvalidError
	switch {
	case errors.Is(err, sequence.ErrNotFound):
		Error(w, r, http.StatusNotFound, "There is no such sequence in this project.")
	case errors.As(err, &bad):
		Error(w, r, http.StatusBadRequest, bad.Error())
	default:
		d.fault(w, r, what, err)
	}
}

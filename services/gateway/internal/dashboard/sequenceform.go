package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/services/gateway/internal/sequence"
)

// The form's kinds of schedule: calendar.Spec's every, or a calendar
// frequency.
const (
	scheduleEvery    = "every"
	scheduleCalendar = "calendar"
)

// sequenceFormFields are the fields of sequence-form.html that problems
// are shown next to, named as the API's.
var sequenceFormFields = []string{
	"name", "schedule", "schedule.every", "schedule.frequency", "schedule.timezone", "schedule.time",
	"schedule.daysOfWeek", "schedule.daysOfMonth", "startAt", "endAt", "catchUp", "overlap", "steps",
}

// weekdays are daysOfWeek's values (calendar.Spec), in the form's order.
var weekdays = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// newSteps is the steps field of a new sequence: one step, to edit.
const newSteps = `[
  {"name": "first", "path": "/jobs/first", "data": {}}
]`

// sequenceForm is the data of sequence-form.html: the form's values as
// given, and its problems by field.
type sequenceForm struct {
	// ID is the sequence edited, nil for a new one.
	ID                                                   *uuid.UUID
	Name, Kind, Every, Frequency, Timezone, Hour, Minute string
	DaysOfWeek                                           []string
	DaysOfMonth, StartAt, EndAt, CatchUp, Overlap, Steps string
	Errors                                               formProblems
	Frequencies, Weekdays, CatchUps, Overlaps            []string
}

// Checked says whether day is one of the form's days of the week.
func (f sequenceForm) Checked(day string) bool { return slices.Contains(f.DaysOfWeek, day) }

// newSequenceForm is GET /dashboard/p/{project}/sequences/new.
func (d *Dashboard) newSequenceForm(w http.ResponseWriter, r *http.Request) {
	renderSequenceForm(w, r, http.StatusOK, sequenceForm{
		Kind: scheduleCalendar, Frequency: string(calendar.Daily), Timezone: "UTC", Hour: "9", Minute: "0",
		CatchUp: sequence.CatchUpLatest, Overlap: sequence.OverlapAllow, Steps: newSteps,
	})
}

// editSequenceForm is GET /dashboard/p/{project}/sequences/{id}/edit: the
// form filled with the sequence's definition.
func (d *Dashboard) editSequenceForm(w http.ResponseWriter, r *http.Request) {
	s, ok := d.ownSequence(w, r)
	if !ok {
		return
	}
	f, err := sequenceFormOf(s)
	if err != nil {
		d.fault(w, r, "sequence form", err)
		return
	}
	renderSequenceForm(w, r, http.StatusOK, f)
}

func renderSequenceForm(w http.ResponseWriter, r *http.Request, status int, f sequenceForm) {
	f.Frequencies = []string{string(calendar.Hourly), string(calendar.Daily), string(calendar.Weekly), string(calendar.Monthly)}
	f.Weekdays = weekdays
	f.CatchUps = []string{sequence.CatchUpLatest, sequence.CatchUpAll, sequence.CatchUpNone}
	f.Overlaps = []string{sequence.OverlapAllow, sequence.OverlapSkip}
	RenderStatus(w, r, status, "sequence-form.html", f)
}

// createSequence is POST /dashboard/p/{project}/sequences (members and
// owners): the form as a POST /v1/sequences body, validated and stored by
// the API's code; then 303 to the sequence.
func (d *Dashboard) createSequence(w http.ResponseWriter, r *http.Request) {
	f := readSequenceForm(r)
	d.saveSequence(w, r, f, func(def sequence.Definition) (sequence.Sequence, error) {
		p, _ := ProjectFrom(r)
		return d.Admin.Sequences.Create(r.Context(), p.ID, def)
	})
}

// replaceSequence is POST /dashboard/p/{project}/sequences/{id} (members
// and owners): the form as a PUT /v1/sequences/{id} body.
func (d *Dashboard) replaceSequence(w http.ResponseWriter, r *http.Request) {
	s, ok := d.ownSequence(w, r)
	if !ok {
		return
	}
	f := readSequenceForm(r)
	f.ID = &s.ID
	d.saveSequence(w, r, f, func(def sequence.Definition) (sequence.Sequence, error) {
		return d.Admin.Sequences.Replace(r.Context(), s.ProjectID, s.ID, def)
	})
}

// ownSequence reads the sequence of the route's {id} in the request's
// project, answering 404 when there is none: before the form is read, so
// that another project's sequence is not found whatever the form says.
func (d *Dashboard) ownSequence(w http.ResponseWriter, r *http.Request) (sequence.Sequence, bool) {
	p, _ := ProjectFrom(r)
	id, ok := d.sequenceID(w, r)
	if !ok {
		return sequence.Sequence{}, false
	}
	s, err := d.Admin.Sequences.Get(r.Context(), p.ID, id)
	if err != nil {
		d.sequenceError(w, r, "get sequence", err)
		return sequence.Sequence{}, false
	}
	return s, true
}

// saveSequence validates the form as the API validates its body
// (sequence.Request.Validate) and stores it with save; a refusal shows
// the form again with the problems by field.
func (d *Dashboard) saveSequence(w http.ResponseWriter, r *http.Request, f sequenceForm,
	save func(sequence.Definition) (sequence.Sequence, error),
) {
	p, _ := ProjectFrom(r)
	req, problems := f.request()
	refuse := func(status int, service formProblems) {
		f.Errors = problems.merge(service)
		renderSequenceForm(w, r, status, f)
	}
	def, err := req.Validate()
	if err == nil && len(problems) > 0 {
		refuse(http.StatusBadRequest, nil)
		return
	}
	var s sequence.Sequence
	if err == nil {
		s, err = save(def)
	}
	var (
		invalid  *sequence.InvalidError
		tooLarge *sequence.TooLargeError
	)
	switch {
	case errors.As(err, &tooLarge):
		refuse(http.StatusRequestEntityTooLarge, formProblems{"steps": tooLarge.Error()})
	case errors.As(err, &invalid):
		service := formProblems{}
		for _, pr := range invalid.Problems {
			service.place(sequenceFormFields, pr.Field, pr.Message)
		}
		refuse(http.StatusBadRequest, service)
	case errors.Is(err, sequence.ErrNameTaken):
		refuse(http.StatusConflict, formProblems{"name": "name: is used by another sequence of this project"})
	case err != nil:
		d.sequenceError(w, r, "save sequence", err)
	default:
		d.Log.Info("dashboard sequence saved", "project_id", p.ID, "sequence_id", s.ID, "user_id", sessionFrom(r).user.ID)
		http.Redirect(w, r, Prefix+"/p/"+p.ID.String()+"/sequences/"+s.ID.String(), http.StatusSeeOther)
	}
}

func readSequenceForm(r *http.Request) sequenceForm {
	_ = r.ParseForm() // checkCSRF parsed it
	v := func(name string) string { return strings.TrimSpace(r.PostFormValue(name)) }
	return sequenceForm{
		Name: v("name"), Kind: v("kind"), Every: v("every"), Frequency: v("frequency"), Timezone: v("timezone"),
		Hour: v("hour"), Minute: v("minute"), DaysOfWeek: r.PostForm["daysOfWeek"], DaysOfMonth: v("daysOfMonth"),
		StartAt: v("startAt"), EndAt: v("endAt"), CatchUp: v("catchUp"), Overlap: v("overlap"), Steps: r.PostFormValue("steps"),
	}
}

// request is the form as the body of POST /v1/sequences, and the problems
// of reading it. Of the schedule it takes the fields of the kind and
// frequency chosen only: the form shows the others hidden.
func (f sequenceForm) request() (sequence.Request, formProblems) {
	problems := formProblems{}
	req := sequence.Request{Name: &f.Name, CatchUp: &f.CatchUp, Overlap: &f.Overlap}
	if f.StartAt != "" {
		req.StartAt = &f.StartAt
	}
	if f.EndAt != "" {
		req.EndAt = &f.EndAt
	}
	switch f.Kind {
	case scheduleEvery:
		req.Schedule = &calendar.Spec{Every: &f.Every}
	case scheduleCalendar:
		req.Schedule = f.calendarSpec(problems)
	default:
		problems.place(sequenceFormFields, "schedule", "choose every or a calendar frequency")
	}
	var steps []sequence.StepRequest
	problems.decodeJSON(sequenceFormFields, "steps", f.Steps, &steps)
	if steps != nil {
		req.Steps = &steps
	}
	return req, problems
}

// calendarSpec is the calendar schedule of the form: the hour for every
// frequency but hourly, the days of the week for weekly, the days of the
// month for monthly.
func (f sequenceForm) calendarSpec(problems formProblems) *calendar.Spec {
	spec := &calendar.Spec{Frequency: &f.Frequency, Timezone: &f.Timezone, Time: &calendar.TimeSpec{
		Minute: problems.integer(sequenceFormFields, "schedule.time.minute", f.Minute),
	}}
	if f.Frequency != string(calendar.Hourly) {
		spec.Time.Hour = problems.integer(sequenceFormFields, "schedule.time.hour", f.Hour)
	}
	switch f.Frequency {
	case string(calendar.Weekly):
		spec.DaysOfWeek = append([]string{}, f.DaysOfWeek...)
	case string(calendar.Monthly):
		spec.DaysOfMonth = []int{}
		for _, w := range words(f.DaysOfMonth) {
			day, err := strconv.Atoi(w)
			if err != nil {
				problems.place(sequenceFormFields, "schedule.daysOfMonth", "must be whole numbers (1-31, -1 for the last day) separated by spaces or commas")
				break
			}
			spec.DaysOfMonth = append(spec.DaysOfMonth, day)
		}
	}
	return spec
}

// sequenceFormOf is the form of a stored sequence: its definition as the
// API shows it, the steps as their JSON.
func sequenceFormOf(s sequence.Sequence) (sequenceForm, error) {
	f := sequenceForm{
		ID: &s.ID, Name: s.Name, CatchUp: s.CatchUp, Overlap: s.Overlap,
		StartAt: s.StartAt.UTC().Format(time.RFC3339Nano), Kind: scheduleCalendar,
	}
	if s.EndAt != nil {
		f.EndAt = s.EndAt.UTC().Format(time.RFC3339Nano)
	}
	spec := s.Spec
	switch {
	case spec.Every != nil:
		f.Kind, f.Every = scheduleEvery, *spec.Every
	default:
		f.Frequency, f.Timezone = deref(spec.Frequency), deref(spec.Timezone)
		if spec.Time != nil {
			f.Hour, f.Minute = intText(spec.Time.Hour), intText(spec.Time.Minute)
		}
		f.DaysOfWeek = spec.DaysOfWeek
		days := make([]string, len(spec.DaysOfMonth))
		for i, day := range spec.DaysOfMonth {
			days[i] = strconv.Itoa(day)
		}
		f.DaysOfMonth = strings.Join(days, " ")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s.StepsList); err != nil {
		return sequenceForm{}, err
	}
	f.Steps = strings.TrimSpace(buf.String())
	return f, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func intText(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}

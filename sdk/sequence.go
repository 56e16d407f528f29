package sundial

import (
	"context"
	"errors"
	"iter"
	"net/url"
	"strconv"
	"time"
)

// The calendar frequencies of a SequenceSchedule.
const (
	FrequencyHourly  = "hourly"
	FrequencyDaily   = "daily"
	FrequencyWeekly  = "weekly"
	FrequencyMonthly = "monthly"
)

// The catch-up policies (missed slots while the service was down) and the
// overlap policies (a slot while the last run is unfinished).
const (
	CatchUpLatest = "latest"
	CatchUpAll    = "all"
	CatchUpNone   = "none"
	OverlapAllow  = "allow"
	OverlapSkip   = "skip"
)

// The statuses of a sequence.
const (
	SequenceActive = "active"
	SequencePaused = "paused"
	SequenceEnded  = "ended"
)

// LastDayOfMonth in DaysOfMonth is the last day of each month.
const LastDayOfMonth = -1

// SequenceSchedule is when a sequence runs: Every alone (a duration such as
// "15m" or "1d", from 1m to 365d: slots at StartAt + k × Every), or a
// calendar: Frequency, Timezone, Time, and DaysOfWeek (weekly) or
// DaysOfMonth (monthly). Calendar slots are wall times in Timezone; a time
// skipped by a DST change runs at the end of the gap, a time that happens
// twice runs once, the first time.
type SequenceSchedule struct {
	Every     string        `json:"every,omitempty"`
	Frequency string        `json:"frequency,omitempty"`
	Timezone  string        `json:"timezone,omitempty"`
	Time      *ScheduleTime `json:"time,omitempty"`
	// DaysOfWeek are "mon" to "sun".
	DaysOfWeek []string `json:"daysOfWeek,omitempty"`
	// DaysOfMonth are 1 to 31, or LastDayOfMonth; a day a month lacks is
	// skipped that month.
	DaysOfMonth []int `json:"daysOfMonth,omitempty"`
}

// ScheduleTime is the local time of a calendar slot. Hour is nil for
// hourly schedules, which take the minute only (see At and AtMinute).
type ScheduleTime struct {
	Hour   *int `json:"hour,omitempty"`
	Minute int  `json:"minute"`
}

// At is the time of day hour:minute, for daily, weekly and monthly
// schedules.
func At(hour, minute int) *ScheduleTime {
	return &ScheduleTime{Hour: &hour, Minute: minute}
}

// AtMinute is minute past every hour, for hourly schedules.
func AtMinute(minute int) *ScheduleTime {
	return &ScheduleTime{Minute: minute}
}

// SequenceStep is one hook of each run. A step without DependsOn gets its
// hook when the run starts; one with DependsOn when all the steps it names
// have completed (and is skipped if one of them failed).
type SequenceStep struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Data is any JSON object, at most 64 KiB; a sequence read from the
	// API has it as a map[string]any.
	Data          any            `json:"data"`
	DependsOn     []string       `json:"dependsOn,omitempty"`
	RetryOverride *RetryOverride `json:"retryOverride,omitempty"`
}

// SequenceRequest is a sequence's definition, to create or replace one.
type SequenceRequest struct {
	// Name is 1 to 100 of a-z, 0-9, _ and -, unique in the project.
	Name     string           `json:"name"`
	Schedule SequenceSchedule `json:"schedule"`
	// Steps are 1 to 10.
	Steps []SequenceStep `json:"steps"`
	// StartAt is the first instant a slot may have, and the anchor of
	// Every; the creation time when zero.
	StartAt time.Time `json:"startAt,omitzero"`
	// EndAt is the last instant a slot may have; none when zero.
	EndAt time.Time `json:"endAt,omitzero"`
	// CatchUp defaults to CatchUpLatest, Overlap to OverlapAllow.
	CatchUp string `json:"catchUp,omitempty"`
	Overlap string `json:"overlap,omitempty"`
}

// Sequence is a named schedule and the steps each of its runs carries out.
type Sequence struct {
	ID       string           `json:"id"`
	Name     string           `json:"name"`
	Schedule SequenceSchedule `json:"schedule"`
	Steps    []SequenceStep   `json:"steps"`
	StartAt  time.Time        `json:"startAt"`
	EndAt    time.Time        `json:"endAt,omitzero"`
	CatchUp  string           `json:"catchUp"`
	Overlap  string           `json:"overlap"`
	// Status is SequenceActive, SequencePaused or SequenceEnded.
	Status string `json:"status"`
	// NextRunAt is the next slot to run (active sequences only).
	NextRunAt time.Time `json:"nextRunAt,omitzero"`
	// LastRunAt is the latest slot that got a run (started or skipped).
	LastRunAt time.Time `json:"lastRunAt,omitzero"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Request is the sequence's definition, to change and Replace.
func (s Sequence) Request() SequenceRequest {
	return SequenceRequest{
		Name: s.Name, Schedule: s.Schedule, Steps: s.Steps, StartAt: s.StartAt, EndAt: s.EndAt,
		CatchUp: s.CatchUp, Overlap: s.Overlap,
	}
}

// SequencePage is one page of sequences.
type SequencePage struct {
	Data []Sequence `json:"data"`
	Meta ListMeta   `json:"meta"`
}

// SequenceRun is a run of a sequence: one per slot, or per trigger.
type SequenceRun struct {
	ID         string    `json:"id"`
	SequenceID string    `json:"sequenceID"`
	Slot       time.Time `json:"slot"`
	StartedAt  time.Time `json:"startedAt"`
	// Status is "running", "completed", "failed" or "skipped".
	Status string `json:"status"`
	// Trigger is "schedule" or "manual".
	Trigger string `json:"trigger"`
	// SkipReason is "catch_up" or "overlap" for a skipped run.
	SkipReason string            `json:"skipReason,omitempty"`
	FinishedAt time.Time         `json:"finishedAt,omitzero"`
	Steps      []SequenceRunStep `json:"steps"`
}

// SequenceRunStep is a step of a run: "waiting", "pending", "completed",
// "failed" or "skipped", with its hook once it has one.
type SequenceRunStep struct {
	Name   string `json:"name"`
	HookID string `json:"hookID,omitempty"`
	Status string `json:"status"`
}

// SequenceRunPage is one page of a sequence's runs.
type SequenceRunPage struct {
	Data []SequenceRun `json:"data"`
	Meta ListMeta      `json:"meta"`
}

// SequenceTrigger is a run asked for: RunID is the id the run will have.
type SequenceTrigger struct {
	RunID       string    `json:"runId"`
	SequenceID  string    `json:"sequenceId"`
	RequestedAt time.Time `json:"requestedAt"`
}

// SchedulePreviewRequest is a schedule to preview, nothing saved.
type SchedulePreviewRequest struct {
	Schedule SequenceSchedule `json:"schedule"`
	// StartAt is required with Every (its anchor).
	StartAt time.Time `json:"startAt,omitzero"`
	EndAt   time.Time `json:"endAt,omitzero"`
	// Count is 1 to 100; 0 for the server's default (10).
	Count int `json:"count,omitempty"`
}

// SequencePreview is a schedule's next run times, in UTC.
type SequencePreview struct {
	RunTimes []time.Time `json:"runTimes"`
}

// ListSequencesParams pages a listing of sequences or of a sequence's
// runs; zero fields are left out.
type ListSequencesParams struct {
	// Limit is the page size, 1 to 1000 (default 100).
	Limit int
	// Cursor is the previous page's NextCursor (All follows it for you).
	Cursor string
}

func (p ListSequencesParams) values() url.Values {
	v := url.Values{}
	if p.Limit != 0 {
		v.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		v.Set("cursor", p.Cursor)
	}
	return v
}

// SequenceService is the sequences part of the API.
type SequenceService struct{ c *Client }

// ErrSequenceNotFound is FindByName's answer when no sequence has the name.
var ErrSequenceNotFound = errors.New("sundial: no sequence of this project has this name")

// sequence sends a call on one sequence's path (plus rest) and returns the
// answer's data.
func sequence[T any](ctx context.Context, s *SequenceService, cl call, id, rest string) (T, error) {
	p, err := pathOf("/sequences", "id", id)
	if err != nil {
		var zero T
		return zero, err
	}
	cl.path = p + rest
	return get[T](ctx, s.c, cl)
}

// Create makes a sequence and plans its first run (POST /v1/sequences). A
// name already used in the project is an *APIError with status 409.
func (s *SequenceService) Create(ctx context.Context, req SequenceRequest) (Sequence, error) {
	return get[Sequence](ctx, s.c, call{method: "POST", path: "/sequences", body: req})
}

// List returns one page of the project's sequences, newest first
// (GET /v1/sequences).
func (s *SequenceService) List(ctx context.Context, p ListSequencesParams) (SequencePage, error) {
	var page SequencePage
	err := s.c.do(ctx, call{method: "GET", path: "/sequences", query: p.values()}, &page)
	return page, err
}

// All walks every page of the project's sequences from p.Cursor on and
// yields each. An error is yielded once, with a zero Sequence, and ends the
// walk.
func (s *SequenceService) All(ctx context.Context, p ListSequencesParams) iter.Seq2[Sequence, error] {
	return walk(func(cursor string) ([]Sequence, string, error) {
		p.Cursor = cursor
		page, err := s.List(ctx, p)
		return page.Data, page.Meta.NextCursor, err
	}, p.Cursor)
}

// FindByName returns the project's sequence with this name, walking the
// listing; ErrSequenceNotFound when there is none.
func (s *SequenceService) FindByName(ctx context.Context, name string) (Sequence, error) {
	for seq, err := range s.All(ctx, ListSequencesParams{Limit: 1000}) {
		if err != nil {
			return Sequence{}, err
		}
		if seq.Name == name {
			return seq, nil
		}
	}
	return Sequence{}, ErrSequenceNotFound
}

// Get returns one sequence (GET /v1/sequences/{id}).
func (s *SequenceService) Get(ctx context.Context, id string) (Sequence, error) {
	return sequence[Sequence](ctx, s, call{method: "GET"}, id, "")
}

// Replace replaces a sequence's whole definition and plans its next run
// again (PUT /v1/sequences/{id}); a paused sequence stays paused.
func (s *SequenceService) Replace(ctx context.Context, id string, req SequenceRequest) (Sequence, error) {
	return sequence[Sequence](ctx, s, call{method: "PUT", body: req, idempotent: true}, id, "")
}

// Delete deletes a sequence with its runs and cancels its pending and
// retry hooks (DELETE /v1/sequences/{id}).
func (s *SequenceService) Delete(ctx context.Context, id string) error {
	_, err := sequence[struct{}](ctx, s, call{method: "DELETE"}, id, "")
	return err
}

// Pause stops a sequence's runs until Resume; slots that pass meanwhile
// never run (POST /v1/sequences/{id}/pause).
func (s *SequenceService) Pause(ctx context.Context, id string) (Sequence, error) {
	return sequence[Sequence](ctx, s, call{method: "POST", idempotent: true}, id, "/pause")
}

// Resume plans a paused sequence's next run from now
// (POST /v1/sequences/{id}/resume).
func (s *SequenceService) Resume(ctx context.Context, id string) (Sequence, error) {
	return sequence[Sequence](ctx, s, call{method: "POST", idempotent: true}, id, "/resume")
}

// Trigger asks for a run now, outside the schedule
// (POST /v1/sequences/{id}/trigger). Each call asks for one more run, so it
// is not retried after a failure that may have reached the server.
func (s *SequenceService) Trigger(ctx context.Context, id string) (SequenceTrigger, error) {
	return sequence[SequenceTrigger](ctx, s, call{method: "POST"}, id, "/trigger")
}

// Runs returns one page of a sequence's runs, newest slot first
// (GET /v1/sequences/{id}/runs).
func (s *SequenceService) Runs(ctx context.Context, id string, p ListSequencesParams) (SequenceRunPage, error) {
	path, err := pathOf("/sequences", "id", id)
	if err != nil {
		return SequenceRunPage{}, err
	}
	var page SequenceRunPage
	err = s.c.do(ctx, call{method: "GET", path: path + "/runs", query: p.values()}, &page)
	return page, err
}

// AllRuns walks every page of a sequence's runs from p.Cursor on, newest
// slot first, and yields each; an error is yielded once and ends the walk.
func (s *SequenceService) AllRuns(ctx context.Context, id string, p ListSequencesParams) iter.Seq2[SequenceRun, error] {
	return walk(func(cursor string) ([]SequenceRun, string, error) {
		p.Cursor = cursor
		page, err := s.Runs(ctx, id, p)
		return page.Data, page.Meta.NextCursor, err
	}, p.Cursor)
}

// Preview returns a sequence's next count run times (1 to 100; 0 for the
// server's default, 10), at or after now and its StartAt
// (GET /v1/sequences/{id}/preview).
func (s *SequenceService) Preview(ctx context.Context, id string, count int) ([]time.Time, error) {
	q := url.Values{}
	if count != 0 {
		q.Set("count", strconv.Itoa(count))
	}
	p, err := sequence[SequencePreview](ctx, s, call{method: "GET", query: q}, id, "/preview")
	return p.RunTimes, err
}

// PreviewSchedule returns a schedule's next run times without saving
// anything (POST /v1/sequences/preview): check a schedule, its time zone
// and its DST behaviour before creating a sequence with it.
func (s *SequenceService) PreviewSchedule(ctx context.Context, req SchedulePreviewRequest) ([]time.Time, error) {
	p, err := get[SequencePreview](ctx, s.c, call{method: "POST", path: "/sequences/preview", body: req, idempotent: true})
	return p.RunTimes, err
}

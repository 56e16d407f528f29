package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

// sequenceJSON is the Sequence resource, decoded strictly.
type sequenceJSON struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Schedule json.RawMessage `json:"schedule"`
	Steps    []struct {
		Name          string          `json:"name"`
		Path          string          `json:"path"`
		Data          json.RawMessage `json:"data"`
		DependsOn     []string        `json:"dependsOn"`
		RetryOverride json.RawMessage `json:"retryOverride"`
	} `json:"steps"`
	StartAt   time.Time  `json:"startAt"`
	EndAt     *time.Time `json:"endAt"`
	CatchUp   string     `json:"catchUp"`
	Overlap   string     `json:"overlap"`
	Status    string     `json:"status"`
	NextRunAt *time.Time `json:"nextRunAt"`
	LastRunAt *time.Time `json:"lastRunAt"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

type runJSON struct {
	ID         string     `json:"id"`
	SequenceID string     `json:"sequenceID"`
	Slot       time.Time  `json:"slot"`
	StartedAt  time.Time  `json:"startedAt"`
	Status     string     `json:"status"`
	Trigger    string     `json:"trigger"`
	SkipReason string     `json:"skipReason"`
	FinishedAt *time.Time `json:"finishedAt"`
	Steps      []struct {
		Name   string `json:"name"`
		HookID string `json:"hookID"`
		Status string `json:"status"`
	} `json:"steps"`
}

type pageMeta struct {
	TotalItems       int64  `json:"totalItems"`
	TotalItemsCapped bool   `json:"totalItemsCapped"`
	NextCursor       string `json:"nextCursor"`
}

// weekdaysParis is the docs' example: weekdays at 09:00 in Paris, a
// three-step chain.
const weekdaysParis = `{"name":%q,
 "schedule":{"frequency":"weekly","timezone":"Europe/Paris","time":{"hour":9,"minute":0},"daysOfWeek":["mon","tue","wed","thu","fri"]},
 "steps":[
  {"name":"extract","path":"/etl/extract","data":{"source":"orders"}},
  {"name":"transform","path":"/etl/transform","data":{},"dependsOn":["extract"]},
  {"name":"load","path":"/etl/load","data":{"table":"orders"},"dependsOn":["transform"],
   "retryOverride":{"minRetries":3,"delaySecs":30,"strategy":"fixed"}}]}`

func (b bundle) createSequence(body string, mods ...func(*http.Request)) sequenceJSON {
	b.t.Helper()
	res := b.do(http.MethodPost, "/v1/sequences", strings.NewReader(body), mods...)
	require.Equal(b.t, http.StatusCreated, res.status, string(res.body))
	return res.sequence(b.t)
}

func (r response) sequence(t *testing.T) sequenceJSON {
	t.Helper()
	require.Equal(t, http.StatusOK/100, r.status/100, string(r.body))
	return decodeStrict[struct {
		Data sequenceJSON `json:"data"`
	}](t, r.body).Data
}

func (r response) runTimes(t *testing.T) []time.Time {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	return decodeStrict[struct {
		Data struct {
			RunTimes []time.Time `json:"runTimes"`
		} `json:"data"`
	}](t, r.body).Data.RunTimes
}

func (b bundle) sequencePage(path string, mods ...func(*http.Request)) ([]sequenceJSON, pageMeta) {
	b.t.Helper()
	res := b.do(http.MethodGet, path, nil, mods...)
	require.Equal(b.t, http.StatusOK, res.status, string(res.body))
	page := decodeStrict[struct {
		Data []sequenceJSON `json:"data"`
		Meta pageMeta       `json:"meta"`
	}](b.t, res.body)
	return page.Data, page.Meta
}

func (b bundle) runPage(path string) ([]runJSON, pageMeta) {
	b.t.Helper()
	res := b.do(http.MethodGet, path, nil)
	require.Equal(b.t, http.StatusOK, res.status, string(res.body))
	page := decodeStrict[struct {
		Data []runJSON `json:"data"`
		Meta pageMeta  `json:"meta"`
	}](b.t, res.body)
	return page.Data, page.Meta
}

// nextSlot is pkg/calendar's first slot of schedule at or after at.
func nextSlot(t *testing.T, schedule string, startAt, at time.Time) time.Time {
	t.Helper()
	s, err := calendar.Parse([]byte(schedule))
	require.NoError(t, err)
	tt, err := s.Between(startAt, time.Time{})
	require.NoError(t, err)
	next, ok := tt.NextAtOrAfter(at)
	require.True(t, ok)
	return next
}

func TestSequenceCreateGetListReplaceAndPlans(t *testing.T) {
	t.Parallel()
	a := setup(t)
	created := a.createSequence(fmt.Sprintf(weekdaysParis, "nightly-etl"))

	id, err := uuid.Parse(created.ID)
	require.NoError(t, err)
	require.Equal(t, uuid.Version(7), id.Version())
	require.Equal(t, "nightly-etl", created.Name)
	require.Equal(t, "active", created.Status)
	require.Equal(t, "latest", created.CatchUp, "the default")
	require.Equal(t, "allow", created.Overlap, "the default")
	require.Equal(t, created.CreatedAt, created.StartAt, "startAt defaults to the creation time")
	require.Nil(t, created.EndAt)
	require.Nil(t, created.LastRunAt)
	require.JSONEq(t, `{"frequency":"weekly","timezone":"Europe/Paris","time":{"hour":9,"minute":0},"daysOfWeek":["mon","tue","wed","thu","fri"]}`, string(created.Schedule))
	require.Len(t, created.Steps, 3)
	require.Equal(t, []string{"transform"}, created.Steps[2].DependsOn)
	require.JSONEq(t, `{"minRetries":3,"delaySecs":30,"strategy":"fixed","backoffFactor":2,"jitter":false}`, string(created.Steps[2].RetryOverride))
	require.Nil(t, created.Steps[0].DependsOn)
	// Planned on the database's clock at creation (the created_at).
	require.NotNil(t, created.NextRunAt)
	require.Equal(t, nextSlot(t, string(created.Schedule), time.Time{}, created.CreatedAt), *created.NextRunAt)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	local := created.NextRunAt.In(paris)
	require.Equal(t, 9, local.Hour())
	require.NotContains(t, []time.Weekday{time.Saturday, time.Sunday}, local.Weekday())

	require.Equal(t, created, a.do(http.MethodGet, "/v1/sequences/"+created.ID, nil).sequence(t))
	list, meta := a.sequencePage("/v1/sequences")
	require.Equal(t, []sequenceJSON{created}, list)
	require.Equal(t, pageMeta{TotalItems: 1}, meta)

	// PUT replaces the whole definition and plans again from now.
	startAt := time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)
	replaced := a.do(http.MethodPut, "/v1/sequences/"+created.ID, strings.NewReader(fmt.Sprintf(`{"name":"renamed",
		"schedule":{"frequency":"daily","timezone":"America/New_York","time":{"hour":2,"minute":30}},
		"startAt":%q,"catchUp":"none","overlap":"skip",
		"steps":[{"name":"only","path":"/only?x=1","data":{"a":[1,2]}}]}`, startAt.Format(time.RFC3339)))).sequence(t)
	require.Equal(t, created.ID, replaced.ID)
	require.Equal(t, created.CreatedAt, replaced.CreatedAt)
	require.True(t, replaced.UpdatedAt.After(created.UpdatedAt))
	require.Equal(t, "renamed", replaced.Name)
	require.Equal(t, startAt, replaced.StartAt)
	require.Equal(t, "none", replaced.CatchUp)
	require.Equal(t, "skip", replaced.Overlap)
	require.Len(t, replaced.Steps, 1)
	require.Nil(t, replaced.Steps[0].RetryOverride)
	// 2 March 2031 02:30 in New York, EST.
	require.Equal(t, time.Date(2031, 3, 1, 7, 30, 0, 0, time.UTC), *replaced.NextRunAt)

	// Pause drops the slot; PUT keeps a paused sequence paused; resume plans
	// from now.
	paused := a.do(http.MethodPost, "/v1/sequences/"+created.ID+"/pause", nil).sequence(t)
	require.Equal(t, "paused", paused.Status)
	require.Nil(t, paused.NextRunAt)
	require.Equal(t, paused, a.do(http.MethodPost, "/v1/sequences/"+created.ID+"/pause", nil).sequence(t), "pausing again changes nothing")
	still := a.do(http.MethodPut, "/v1/sequences/"+created.ID, strings.NewReader(fmt.Sprintf(weekdaysParis, "renamed"))).sequence(t)
	require.Equal(t, "paused", still.Status)
	require.Nil(t, still.NextRunAt)
	require.Equal(t, created.CreatedAt, still.StartAt, "a left-out startAt is the creation time")
	resumed := a.do(http.MethodPost, "/v1/sequences/"+created.ID+"/resume", nil).sequence(t)
	require.Equal(t, "active", resumed.Status)
	require.Equal(t, nextSlot(t, string(resumed.Schedule), time.Time{}, resumed.UpdatedAt), *resumed.NextRunAt)
	require.Equal(t, resumed, a.do(http.MethodPost, "/v1/sequences/"+created.ID+"/resume", nil).sequence(t), "resuming an active sequence changes nothing")
}

func TestSequenceWithoutSlotsIsEnded(t *testing.T) {
	t.Parallel()
	a := setup(t)
	ended := a.createSequence(`{"name":"past","schedule":{"every":"1h"},"startAt":"2020-01-01T00:00:00Z","endAt":"2020-01-02T00:00:00Z",
		"steps":[{"name":"s","path":"/s","data":{}}]}`)
	require.Equal(t, "ended", ended.Status)
	require.Nil(t, ended.NextRunAt)
	require.Empty(t, a.do(http.MethodGet, "/v1/sequences/"+ended.ID+"/preview", nil).runTimes(t))

	// every: slots at startAt + k*every, the first at or after now.
	every := a.createSequence(`{"name":"every","schedule":{"every":"7m"},"startAt":"2020-01-01T00:00:00Z",
		"steps":[{"name":"s","path":"/s","data":{}}]}`)
	require.Equal(t, "active", every.Status)
	since := every.NextRunAt.Sub(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	require.Zero(t, since%(7*time.Minute))
	require.False(t, every.NextRunAt.Before(every.CreatedAt))
	require.Less(t, every.NextRunAt.Sub(every.CreatedAt), 7*time.Minute)
}

// TestSequenceSlotsEndWithTheYear9999: a schedule whose next slot would
// fall past the year 9999 has none there; creating, listing and previewing
// such a sequence answer as for any sequence that has run out of slots.
func TestSequenceSlotsEndWithTheYear9999(t *testing.T) {
	t.Parallel()
	a := setup(t)
	monthly := `{"frequency":"monthly","timezone":"Pacific/Kiritimati","daysOfMonth":[31],"time":{"hour":23,"minute":0}}`
	last := a.createSequence(`{"name":"last","schedule":` + monthly + `,"startAt":"9999-12-31T10:00:00Z","steps":[{"name":"s","path":"/s","data":{}}]}`)
	require.Equal(t, "ended", last.Status, "the last 31st of 9999 (23:00 at +14:00, 09:00 UTC) is before startAt, the next in 10000")
	require.Nil(t, last.NextRunAt)
	require.Empty(t, a.do(http.MethodGet, "/v1/sequences/"+last.ID+"/preview", nil).runTimes(t))
	slots := a.do(http.MethodPost, "/v1/sequences/preview", strings.NewReader(`{"schedule":`+monthly+`,"startAt":"9999-10-01T00:00:00Z","count":5}`)).runTimes(t)
	require.Equal(t, []time.Time{time.Date(9999, 10, 31, 9, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 9, 0, 0, 0, time.UTC)}, slots,
		"the 31sts of 9999 after startAt, then none")
	list, meta := a.sequencePage("/v1/sequences")
	require.Equal(t, int64(1), meta.TotalItems)
	require.Equal(t, last.ID, list[0].ID)
}

func TestSequenceNamesAreUniquePerProject(t *testing.T) {
	t.Parallel()
	a := setup(t)
	first := a.createSequence(fmt.Sprintf(weekdaysParis, "etl"))
	a.do(http.MethodPost, "/v1/sequences", strings.NewReader(fmt.Sprintf(weekdaysParis, "etl"))).
		requireError(t, http.StatusConflict, "conflict", "name")
	second := a.createSequence(fmt.Sprintf(weekdaysParis, "etl-2"))
	a.do(http.MethodPut, "/v1/sequences/"+second.ID, strings.NewReader(fmt.Sprintf(weekdaysParis, "etl"))).
		requireError(t, http.StatusConflict, "conflict", "name")
	require.Equal(t, "etl-2", a.do(http.MethodGet, "/v1/sequences/"+second.ID, nil).sequence(t).Name)
	require.Equal(t, first, a.do(http.MethodGet, "/v1/sequences/"+first.ID, nil).sequence(t))
}

func TestSequenceRequestsAreValidated(t *testing.T) {
	t.Parallel()
	a := setup(t)
	step := `{"name":"s","path":"/s","data":{}}`
	body := func(extra string, steps ...string) string {
		if len(steps) == 0 {
			steps = []string{step}
		}
		return `{"name":"n","schedule":{"every":"1h"},"steps":[` + strings.Join(steps, ",") + `]` + extra + `}`
	}
	for _, tt := range []struct {
		name, body string
		fields     []string
	}{
		{"unknown field", body(`,"bogus":1`), []string{"bogus"}},
		{"wrong case", `{"Name":"n","schedule":{"every":"1h"},"steps":[` + step + `]}`, []string{"Name"}},
		{"unknown schedule field", `{"name":"n","schedule":{"every":"1h","hourly":true},"steps":[` + step + `]}`, []string{"schedule.hourly"}},
		{"unknown step field", body("", `{"name":"s","path":"/s","data":{},"after":["x"]}`), []string{"steps[0].after"}},
		{"nothing", `{}`, []string{"name", "schedule", "steps"}},
		{"bad name", `{"name":"Nightly ETL","schedule":{"every":"1h"},"steps":[` + step + `]}`, []string{"name"}},
		{"long name", `{"name":"` + strings.Repeat("a", 101) + `","schedule":{"every":"1h"},"steps":[` + step + `]}`, []string{"name"}},
		{"no steps", `{"name":"n","schedule":{"every":"1h"},"steps":[]}`, []string{"steps"}},
		{"eleven steps", body("", strings.Split(strings.Repeat(step+"|", 11), "|")[:11]...), []string{"steps"}},
		{"bad hour", `{"name":"n","schedule":{"frequency":"daily","timezone":"Europe/Paris","time":{"hour":24,"minute":0}},"steps":[` + step + `]}`, []string{"schedule.time.hour"}},
		{"bad zone", `{"name":"n","schedule":{"frequency":"daily","timezone":"Mars/Olympus","time":{"hour":9,"minute":0}},"steps":[` + step + `]}`, []string{"schedule.timezone"}},
		{"every too short", `{"name":"n","schedule":{"every":"30s"},"steps":[` + step + `]}`, []string{"schedule.every"}},
		{"bad catchUp and overlap", body(`,"catchUp":"some","overlap":"never"`), []string{"catchUp", "overlap"}},
		{"endAt before startAt", body(`,"startAt":"2030-01-02T00:00:00Z","endAt":"2030-01-01T00:00:00Z"`), []string{"endAt"}},
		{"bad instant", body(`,"startAt":"tomorrow"`), []string{"startAt"}},
		{"past the year 9999 in UTC", body(`,"startAt":"9999-12-31T23:00:00-05:00","endAt":"9999-12-31T23:30:00-05:00"`), []string{"startAt", "endAt"}},
		{"duplicate step names", body("", step, step), []string{"steps[1].name"}},
		{"bad step", body("", `{"name":"S!","path":"https://evil.example/x","data":[]}`), []string{"steps[0].name", "steps[0].path", "steps[0].data"}},
		{"missing step fields", body("", `{}`), []string{"steps[0].name", "steps[0].path", "steps[0].data"}},
		{"unknown dependency", body("", `{"name":"extract","path":"/e","data":{}}`, `{"name":"transform","path":"/t","data":{}}`,
			`{"name":"load","path":"/l","data":{},"dependsOn":["lod"]}`), []string{"steps[2].dependsOn[0]"}},
		{"depends on itself", body("", `{"name":"a","path":"/a","data":{},"dependsOn":["a"]}`), []string{"steps[0].dependsOn[0]"}},
		{"cycle", body("", `{"name":"extract","path":"/e","data":{},"dependsOn":["load"]}`,
			`{"name":"load","path":"/l","data":{},"dependsOn":["extract"]}`), []string{"steps"}},
		{"bad retryOverride", body("", `{"name":"s","path":"/s","data":{},"retryOverride":{"minRetries":3,"delaySecs":1,"strategy":"fixed"}}`),
			[]string{"steps[0].retryOverride.delaySecs"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a.do(http.MethodPost, "/v1/sequences", strings.NewReader(tt.body)).requireError(t, http.StatusBadRequest, "invalid_request", tt.fields...)
		})
	}
	e := a.do(http.MethodPost, "/v1/sequences", strings.NewReader(body("", `{"name":"extract","path":"/e","data":{}}`,
		`{"name":"transform","path":"/t","data":{}}`, `{"name":"load","path":"/l","data":{},"dependsOn":["lod"]}`))).errorBody(t)
	require.Equal(t, `unknown step "lod"`, e.Details[0].Message)
	e = a.do(http.MethodPost, "/v1/sequences", strings.NewReader(body("", `{"name":"extract","path":"/e","data":{},"dependsOn":["load"]}`,
		`{"name":"load","path":"/l","data":{},"dependsOn":["extract"]}`))).errorBody(t)
	require.Equal(t, "cycle extract -> load -> extract", e.Details[0].Message)

	big := `{"name":"s","path":"/s","data":{"x":"` + strings.Repeat("a", 64<<10) + `"}}`
	a.do(http.MethodPost, "/v1/sequences", strings.NewReader(body("", big))).requireError(t, http.StatusRequestEntityTooLarge, "payload_too_large", "steps[0].data")

	// PUT validates the same way.
	s := a.createSequence(body(""))
	a.do(http.MethodPut, "/v1/sequences/"+s.ID, strings.NewReader(body(`,"bogus":1`))).requireError(t, http.StatusBadRequest, "invalid_request", "bogus")
	_, meta := a.sequencePage("/v1/sequences")
	require.Equal(t, int64(1), meta.TotalItems, "nothing was created by the refused requests")
}

func TestSequenceListPagesNewestFirst(t *testing.T) {
	t.Parallel()
	a := setup(t)
	var ids []string
	for i := range 5 {
		ids = append([]string{a.createSequence(fmt.Sprintf(weekdaysParis, fmt.Sprintf("s%d", i))).ID}, ids...)
	}
	var got []string
	path := "/v1/sequences?limit=2"
	for range 5 {
		page, meta := a.sequencePage(path)
		require.Equal(t, int64(5), meta.TotalItems)
		for _, s := range page {
			got = append(got, s.ID)
		}
		if meta.NextCursor == "" {
			break
		}
		path = "/v1/sequences?limit=2&cursor=" + meta.NextCursor
	}
	require.Equal(t, ids, got)

	a.do(http.MethodGet, "/v1/sequences?limit=0", nil).requireError(t, http.StatusBadRequest, "invalid_request", "limit")
	a.do(http.MethodGet, "/v1/sequences?limit=1001", nil).requireError(t, http.StatusBadRequest, "invalid_request", "limit")
	a.do(http.MethodGet, "/v1/sequences?offset=2", nil).requireError(t, http.StatusBadRequest, "invalid_request", "offset")
	a.do(http.MethodGet, "/v1/sequences?sortby=name", nil).requireError(t, http.StatusBadRequest, "invalid_request", "sortby")
	a.do(http.MethodGet, "/v1/sequences?cursor=nope", nil).requireError(t, http.StatusBadRequest, "invalid_request", "cursor")
	_, meta := a.sequencePage("/v1/sequences?limit=1")
	a.do(http.MethodGet, "/v1/sequences/"+ids[0]+"/runs?cursor="+meta.NextCursor, nil).
		requireError(t, http.StatusBadRequest, "invalid_request", "cursor")
}

func TestSequenceTriggerRunsAndDelete(t *testing.T) {
	t.Parallel()
	a := setup(t)
	s := a.createSequence(fmt.Sprintf(weekdaysParis, "etl"))
	seqID := uuid.MustParse(s.ID)
	projectID := uuid.MustParse(a.creds.ProjectID)

	// Trigger: a request the scheduler turns into a run with this id.
	res := a.do(http.MethodPost, "/v1/sequences/"+s.ID+"/trigger", nil)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	tr := decodeStrict[struct {
		Data struct {
			RunID       string    `json:"runId"`
			SequenceID  string    `json:"sequenceId"`
			RequestedAt time.Time `json:"requestedAt"`
		} `json:"data"`
	}](t, res.body).Data
	require.Equal(t, s.ID, tr.SequenceID)
	triggers, err := a.tq.ListSequenceTriggersForTest(a.ctx, seqID)
	require.NoError(t, err)
	require.Len(t, triggers, 1)
	require.Equal(t, tr.RunID, triggers[0].RunID.String())
	require.Equal(t, uuid.Version(7), triggers[0].RunID.Version())
	require.Equal(t, tr.RequestedAt, triggers[0].RequestedAt.UTC())
	count, err := a.tq.CountSequenceRunsForTest(a.ctx, seqID)
	require.NoError(t, err)
	require.Zero(t, count, "the gateway writes no run")

	// Runs, as the scheduler records them: newest slot first, with steps.
	day := time.Date(2031, 6, 2, 7, 0, 0, 0, time.UTC)
	hooks := map[string]string{}
	for _, status := range []string{"pending", "retry", "completed", "failed"} {
		hooks[status] = a.sequenceHook(seqID, status, day)
	}
	otherHook := a.stateHook(a.creds.ProjectID, "pending", day)
	runs := make([]uuid.UUID, 3)
	for i := range runs {
		runs[i] = uuid.Must(uuid.NewV7())
		p := storetest.InsertSequenceRunForTestParams{
			ID: runs[i], ProjectID: projectID, SequenceID: seqID, Slot: day.AddDate(0, 0, i), Trigger: "schedule", Status: "running",
		}
		if i == 0 {
			p.Status, p.SkipReason = "skipped", ptr("catch_up")
		}
		require.NoError(t, a.tq.InsertSequenceRunForTest(a.ctx, p))
	}
	hookID := uuid.MustParse(hooks["pending"])
	require.NoError(t, a.tq.InsertSequenceRunStepForTest(a.ctx, storetest.InsertSequenceRunStepForTestParams{
		RunID: runs[2], Name: "extract", DependsOn: []string{}, HookID: &hookID, Status: "pending",
	}))
	require.NoError(t, a.tq.InsertSequenceRunStepForTest(a.ctx, storetest.InsertSequenceRunStepForTestParams{
		RunID: runs[2], Name: "transform", DependsOn: []string{"extract"}, Status: "waiting",
	}))
	first, meta := a.runPage("/v1/sequences/" + s.ID + "/runs?limit=2")
	require.Equal(t, int64(3), meta.TotalItems)
	require.Len(t, first, 2)
	require.Equal(t, runs[2].String(), first[0].ID)
	require.Equal(t, s.ID, first[0].SequenceID)
	require.Equal(t, day.AddDate(0, 0, 2), first[0].Slot)
	require.Equal(t, "schedule", first[0].Trigger)
	require.Len(t, first[0].Steps, 2)
	require.Equal(t, "extract", first[0].Steps[0].Name)
	require.Equal(t, hooks["pending"], first[0].Steps[0].HookID)
	require.Equal(t, "waiting", first[0].Steps[1].Status)
	require.Empty(t, first[0].Steps[1].HookID)
	require.Equal(t, runs[1].String(), first[1].ID)
	require.Empty(t, first[1].Steps)
	last, meta := a.runPage("/v1/sequences/" + s.ID + "/runs?limit=2&cursor=" + meta.NextCursor)
	require.Empty(t, meta.NextCursor)
	require.Len(t, last, 1)
	require.Equal(t, "skipped", last[0].Status)
	require.Equal(t, "catch_up", last[0].SkipReason)

	// The bulk filter by sequence finds the sequence's hooks only.
	res = a.do(http.MethodPost, "/v1/hooks/bulk/retry", strings.NewReader(fmt.Sprintf(
		`{"startTime":%q,"endTime":%q,"limit":1000,"sequenceID":%q}`,
		day.Add(-time.Hour).Format(time.RFC3339), day.Add(time.Hour).Format(time.RFC3339), s.ID)))
	require.Equal(t, 1, res.affected(t), "the failed hook of the sequence")

	// Delete: the sequence and its runs go, its pending and retry hooks are
	// cancelled, its finished hooks and other hooks stay.
	res = a.do(http.MethodDelete, "/v1/sequences/"+s.ID, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.JSONEq(t, `{"data":{}}`, string(res.body))
	require.Equal(t, "gone", a.status(hooks["pending"]))
	require.Equal(t, "gone", a.status(hooks["retry"]))
	require.Equal(t, "gone", a.status(hooks["failed"]), "retried to pending, so cancelled")
	require.Equal(t, "completed", a.status(hooks["completed"]))
	require.Equal(t, "pending", a.status(otherHook))
	count, err = a.tq.CountSequenceRunsForTest(a.ctx, seqID)
	require.NoError(t, err)
	require.Zero(t, count)
	for _, op := range []struct{ method, path string }{
		{http.MethodGet, ""}, {http.MethodDelete, ""}, {http.MethodPost, "/pause"}, {http.MethodPost, "/resume"},
		{http.MethodPost, "/trigger"}, {http.MethodGet, "/runs"}, {http.MethodGet, "/preview"},
	} {
		a.do(op.method, "/v1/sequences/"+s.ID+op.path, nil).requireError(t, http.StatusNotFound, "not_found")
	}
	a.do(http.MethodGet, "/v1/sequences/not-a-uuid", nil).requireError(t, http.StatusNotFound, "not_found")
}

// sequenceHook is a hook of the sequence in a state, as a run would have
// created it.
func (b bundle) sequenceHook(sequenceID uuid.UUID, status string, postAt time.Time) string {
	b.t.Helper()
	p := storetest.InsertHookForBulkTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: uuid.MustParse(b.creds.ProjectID), Path: "/etl/extract",
		Domain: "hooks.example.com", Data: json.RawMessage(`{}`), PostAt: postAt, Status: status, SequenceID: &sequenceID,
	}
	if status != "pending" {
		p.Attempts, p.TryAt = 1, &postAt
	}
	h, err := b.tq.InsertHookForBulkTest(b.ctx, p)
	require.NoError(b.t, err)
	return h.ID.String()
}

func TestSequencePreviewMatchesTheCalendarAcrossDST(t *testing.T) {
	t.Parallel()
	a := setup(t)
	// Daily 02:30 in New York from 2030-03-01: 10 March 2030 springs
	// forward (02:30 does not exist, runs at 03:00 EDT), 3 November falls
	// back.
	schedule := `{"frequency":"daily","timezone":"America/New_York","time":{"hour":2,"minute":30}}`
	startAt := time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC)
	spec, err := calendar.Parse([]byte(schedule))
	require.NoError(t, err)
	tt, err := spec.Between(startAt, time.Time{})
	require.NoError(t, err)
	want := tt.Slots(startAt, time.Time{}, 12)
	require.Len(t, want, 12)
	require.Equal(t, time.Date(2030, 3, 10, 7, 0, 0, 0, time.UTC), want[9], "the gap's slot runs at the transition")

	got := a.do(http.MethodPost, "/v1/sequences/preview", strings.NewReader(fmt.Sprintf(
		`{"schedule":%s,"startAt":%q,"count":12}`, schedule, startAt.Format(time.RFC3339)))).runTimes(t)
	require.Equal(t, want, got)

	s := a.createSequence(fmt.Sprintf(`{"name":"ny","schedule":%s,"startAt":%q,"steps":[{"name":"s","path":"/s","data":{}}]}`,
		schedule, startAt.Format(time.RFC3339)))
	require.Equal(t, want[0], *s.NextRunAt)
	require.Equal(t, want, a.do(http.MethodGet, "/v1/sequences/"+s.ID+"/preview?count=12", nil).runTimes(t))
	require.Equal(t, want[:10], a.do(http.MethodGet, "/v1/sequences/"+s.ID+"/preview", nil).runTimes(t), "10 by default")

	// Fall back: 01:30 happens twice and runs once, at the earlier instant.
	fold := a.do(http.MethodPost, "/v1/sequences/preview", strings.NewReader(
		`{"schedule":{"frequency":"daily","timezone":"America/New_York","time":{"hour":1,"minute":30}},
		  "startAt":"2030-11-03T00:00:00Z","endAt":"2030-11-04T12:00:00Z"}`)).runTimes(t)
	require.Equal(t, []time.Time{time.Date(2030, 11, 3, 5, 30, 0, 0, time.UTC), time.Date(2030, 11, 4, 6, 30, 0, 0, time.UTC)}, fold,
		"endAt bounds the preview")

	a.do(http.MethodPost, "/v1/sequences/preview", strings.NewReader(`{"schedule":{"every":"1h"}}`)).
		requireError(t, http.StatusBadRequest, "invalid_request", "startAt")
	a.do(http.MethodPost, "/v1/sequences/preview", strings.NewReader(`{"schedule":{"every":"1h"},"startAt":"2030-01-01T00:00:00Z","count":101}`)).
		requireError(t, http.StatusBadRequest, "invalid_request", "count")
	a.do(http.MethodPost, "/v1/sequences/preview", strings.NewReader(`{"schedule":{"frequency":"hourly","timezone":"UTC","time":{"hour":1,"minute":0}},"bogus":1}`)).
		requireError(t, http.StatusBadRequest, "invalid_request", "bogus")
	a.do(http.MethodPost, "/v1/sequences/preview", strings.NewReader(`{"schedule":{"frequency":"hourly","timezone":"UTC","time":{"hour":1,"minute":0}}}`)).
		requireError(t, http.StatusBadRequest, "invalid_request", "schedule.time.hour")
	for _, q := range []string{"count=0", "count=101", "count=x", "limit=3"} {
		field, _, _ := strings.Cut(q, "=")
		a.do(http.MethodGet, "/v1/sequences/"+s.ID+"/preview?"+q, nil).requireError(t, http.StatusBadRequest, "invalid_request", field)
	}

	// Without startAt, the preview starts now (the gateway's clock).
	before := time.Now()
	now := a.do(http.MethodPost, "/v1/sequences/preview", strings.NewReader(`{"schedule":{"frequency":"hourly","timezone":"Asia/Kathmandu","time":{"minute":15}},"count":3}`)).runTimes(t)
	require.Len(t, now, 3)
	require.False(t, now[0].Before(before.Truncate(time.Second)))
	require.LessOrEqual(t, now[0].Sub(before), time.Hour)
	for _, rt := range now {
		require.Equal(t, 30, rt.Minute(), "xx:15 at +05:45 is xx:30 UTC")
	}
}

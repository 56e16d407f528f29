package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/sequence"
)

// Sequences stores sequences (sequence.Service).
type Sequences interface {
	Create(ctx context.Context, projectID uuid.UUID, d sequence.Definition) (sequence.Sequence, error)
	Get(ctx context.Context, projectID, id uuid.UUID) (sequence.Sequence, error)
	List(ctx context.Context, projectID uuid.UUID, pg sequence.Page) (sequence.ListPage, error)
	Replace(ctx context.Context, projectID, id uuid.UUID, d sequence.Definition) (sequence.Sequence, error)
	Delete(ctx context.Context, projectID, id uuid.UUID) error
	Pause(ctx context.Context, projectID, id uuid.UUID) (sequence.Sequence, error)
	Resume(ctx context.Context, projectID, id uuid.UUID) (sequence.Sequence, error)
	Trigger(ctx context.Context, projectID, id uuid.UUID) (sequence.Trigger, error)
	Runs(ctx context.Context, projectID, id uuid.UUID, pg sequence.Page) (sequence.RunPage, error)
	Preview(ctx context.Context, projectID, id uuid.UUID, count int) ([]time.Time, error)
}

// SequenceDeps is what the sequence operations need, set by app.New.
type SequenceDeps struct {
	Sequences Sequences
	// Now is the clock of POST /v1/sequences/preview, which reads nothing;
	// nil means time.Now.
	Now func() time.Time
}

// sequenceManagement serves /v1/sequences.
type sequenceManagement struct {
	SequenceDeps
}

var errSequenceNotFound = newError(http.StatusNotFound, CodeNotFound, "no such sequence in this project")

// CreateSequence creates a sequence (POST /v1/sequences).
func (m sequenceManagement) CreateSequence(ctx context.Context, req gen.CreateSequenceRequestObject) (gen.CreateSequenceResponseObject, error) {
	d, err := req.Body.Validate()
	if err != nil {
		return nil, sequenceError(err)
	}
	s, err := m.Sequences.Create(ctx, projectOf(ctx), d)
	if err != nil {
		return nil, sequenceError(err)
	}
	return gen.CreateSequence201JSONResponse{SequenceCreatedJSONResponse: gen.SequenceCreatedJSONResponse{
		Body: gen.SequenceResponse{Data: toSequence(s)},
	}}, nil
}

// ListSequences lists the project's sequences (GET /v1/sequences).
func (m sequenceManagement) ListSequences(ctx context.Context, req gen.ListSequencesRequestObject) (gen.ListSequencesResponseObject, error) {
	pg, err := sequencePage(ctx, req.Params.Limit, req.Params.Cursor, req.Params.Offset)
	if err != nil {
		return nil, err
	}
	page, err := m.Sequences.List(ctx, projectOf(ctx), pg)
	if err != nil {
		return nil, sequenceError(err)
	}
	data := make([]gen.Sequence, len(page.Sequences))
	for i, s := range page.Sequences {
		data[i] = toSequence(s)
	}
	return gen.ListSequences200JSONResponse{SequencePageJSONResponse: gen.SequencePageJSONResponse{
		Body: gen.SequenceListResponse{Data: data, Meta: listMeta(page.Total, page.NextCursor)},
	}}, nil
}

// GetSequence returns a sequence (GET /v1/sequences/{id}).
func (m sequenceManagement) GetSequence(ctx context.Context, req gen.GetSequenceRequestObject) (gen.GetSequenceResponseObject, error) {
	s, err := m.one(ctx, req.Id, m.Sequences.Get)
	if err != nil {
		return nil, err
	}
	return gen.GetSequence200JSONResponse{SequenceFoundJSONResponse: sequenceFound(s)}, nil
}

// ReplaceSequence replaces a sequence's definition (PUT /v1/sequences/{id}).
func (m sequenceManagement) ReplaceSequence(ctx context.Context, req gen.ReplaceSequenceRequestObject) (gen.ReplaceSequenceResponseObject, error) {
	id, err := sequenceID(req.Id)
	if err != nil {
		return nil, err
	}
	d, err := req.Body.Validate()
	if err != nil {
		return nil, sequenceError(err)
	}
	s, err := m.Sequences.Replace(ctx, projectOf(ctx), id, d)
	if err != nil {
		return nil, sequenceError(err)
	}
	return gen.ReplaceSequence200JSONResponse{SequenceFoundJSONResponse: sequenceFound(s)}, nil
}

// DeleteSequence deletes a sequence and cancels its pending hooks (DELETE
// /v1/sequences/{id}).
func (m sequenceManagement) DeleteSequence(ctx context.Context, req gen.DeleteSequenceRequestObject) (gen.DeleteSequenceResponseObject, error) {
	id, err := sequenceID(req.Id)
	if err != nil {
		return nil, err
	}
	if err := m.Sequences.Delete(ctx, projectOf(ctx), id); err != nil {
		return nil, sequenceError(err)
	}
	return gen.DeleteSequence200JSONResponse{Body: gen.EmptyResponse{Data: map[string]any{}}}, nil
}

// PauseSequence pauses a sequence (POST /v1/sequences/{id}/pause).
func (m sequenceManagement) PauseSequence(ctx context.Context, req gen.PauseSequenceRequestObject) (gen.PauseSequenceResponseObject, error) {
	s, err := m.one(ctx, req.Id, m.Sequences.Pause)
	if err != nil {
		return nil, err
	}
	return gen.PauseSequence200JSONResponse{SequenceFoundJSONResponse: sequenceFound(s)}, nil
}

// ResumeSequence resumes a sequence (POST /v1/sequences/{id}/resume).
func (m sequenceManagement) ResumeSequence(ctx context.Context, req gen.ResumeSequenceRequestObject) (gen.ResumeSequenceResponseObject, error) {
	s, err := m.one(ctx, req.Id, m.Sequences.Resume)
	if err != nil {
		return nil, err
	}
	return gen.ResumeSequence200JSONResponse{SequenceFoundJSONResponse: sequenceFound(s)}, nil
}

// TriggerSequence asks for a run now (POST /v1/sequences/{id}/trigger).
func (m sequenceManagement) TriggerSequence(ctx context.Context, req gen.TriggerSequenceRequestObject) (gen.TriggerSequenceResponseObject, error) {
	id, err := sequenceID(req.Id)
	if err != nil {
		return nil, err
	}
	tr, err := m.Sequences.Trigger(ctx, projectOf(ctx), id)
	if err != nil {
		return nil, sequenceError(err)
	}
	return gen.TriggerSequence201JSONResponse{SequenceTriggeredJSONResponse: gen.SequenceTriggeredJSONResponse{
		Body: gen.SequenceTriggerResponse{Data: gen.SequenceTrigger{
			RunId: tr.RunID, SequenceId: tr.SequenceID, RequestedAt: tr.RequestedAt.UTC(),
		}},
	}}, nil
}

// ListSequenceRuns lists a sequence's runs (GET /v1/sequences/{id}/runs).
func (m sequenceManagement) ListSequenceRuns(ctx context.Context, req gen.ListSequenceRunsRequestObject) (gen.ListSequenceRunsResponseObject, error) {
	pg, err := sequencePage(ctx, req.Params.Limit, req.Params.Cursor, req.Params.Offset)
	if err != nil {
		return nil, err
	}
	id, err := sequenceID(req.Id)
	if err != nil {
		return nil, err
	}
	page, err := m.Sequences.Runs(ctx, projectOf(ctx), id, pg)
	if err != nil {
		return nil, sequenceError(err)
	}
	data := make([]gen.SequenceRun, len(page.Runs))
	for i, r := range page.Runs {
		data[i] = toRun(r)
	}
	return gen.ListSequenceRuns200JSONResponse{SequenceRunPageJSONResponse: gen.SequenceRunPageJSONResponse{
		Body: gen.SequenceRunListResponse{Data: data, Meta: listMeta(page.Total, page.NextCursor)},
	}}, nil
}

// PreviewSequence shows a sequence's next run times (GET
// /v1/sequences/{id}/preview).
func (m sequenceManagement) PreviewSequence(ctx context.Context, req gen.PreviewSequenceRequestObject) (gen.PreviewSequenceResponseObject, error) {
	if err := onlyParams(ctx, "count"); err != nil {
		return nil, err
	}
	count, err := sequence.ValidCount(req.Params.Count)
	if err != nil {
		return nil, sequenceError(err)
	}
	id, err := sequenceID(req.Id)
	if err != nil {
		return nil, err
	}
	times, err := m.Sequences.Preview(ctx, projectOf(ctx), id, count)
	if err != nil {
		return nil, sequenceError(err)
	}
	return gen.PreviewSequence200JSONResponse{SequenceRunTimesJSONResponse: runTimesResponse(times)}, nil
}

// PreviewSchedule shows a schedule's next run times, storing and reading
// nothing (POST /v1/sequences/preview).
func (m sequenceManagement) PreviewSchedule(_ context.Context, req gen.PreviewScheduleRequestObject) (gen.PreviewScheduleResponseObject, error) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	times, err := req.Body.RunTimes(now())
	if err != nil {
		return nil, sequenceError(err)
	}
	return gen.PreviewSchedule200JSONResponse{SequenceRunTimesJSONResponse: runTimesResponse(times)}, nil
}

// one runs op on the sequence named by the path's id.
func (m sequenceManagement) one(ctx context.Context, raw string,
	op func(context.Context, uuid.UUID, uuid.UUID) (sequence.Sequence, error),
) (sequence.Sequence, error) {
	id, err := sequenceID(raw)
	if err != nil {
		return sequence.Sequence{}, err
	}
	s, err := op(ctx, projectOf(ctx), id)
	if err != nil {
		return sequence.Sequence{}, sequenceError(err)
	}
	return s, nil
}

// sequenceID reads a sequence id from the path; a malformed one is a 404
// like any id naming no sequence of this project.
func sequenceID(raw string) (uuid.UUID, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, errSequenceNotFound
	}
	return id, nil
}

// sequencePage checks a listing's parameters; names it does not define are
// refused rather than ignored, as listing hooks does.
func sequencePage(ctx context.Context, limit *int, cursor, offset *string) (sequence.Page, error) {
	if err := onlyParams(ctx, "limit", "cursor", "offset"); err != nil {
		return sequence.Page{}, err
	}
	pg, err := sequence.ValidPage(limit, cursor, offset)
	if err != nil {
		return sequence.Page{}, sequenceError(err)
	}
	return pg, nil
}

// onlyParams refuses a query parameter the operation does not define.
func onlyParams(ctx context.Context, names ...string) error {
	values, ok := ctx.Value(queryKey{}).(url.Values)
	if !ok {
		return internal(errors.New("the query string was not kept (keepQuery does not cover this operation)"))
	}
	for name := range values {
		known := false
		for _, n := range names {
			known = known || n == name
		}
		if !known {
			return invalid(Detail{Field: name, Message: "is not a parameter of this operation"})
		}
	}
	return nil
}

// sequenceError maps the sequence package's errors to responses.
func sequenceError(err error) error {
	var (
		bad      *sequence.InvalidError
		tooLarge *sequence.TooLargeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, tooLarge.Error(),
			Detail{Field: tooLarge.Field, Message: fmt.Sprintf("must be at most %d bytes", tooLarge.Max)})
	case errors.As(err, &bad):
		details := make([]Detail, len(bad.Problems))
		for i, p := range bad.Problems {
			details[i] = Detail{Field: p.Field, Message: p.Message}
		}
		return invalid(details...)
	case errors.Is(err, sequence.ErrNotFound):
		return errSequenceNotFound
	case errors.Is(err, sequence.ErrNameTaken):
		return newError(http.StatusConflict, CodeConflict, sequence.ErrNameTaken.Error(),
			Detail{Field: "name", Message: "is used by another sequence of this project"})
	default:
		return internal(err)
	}
}

func listMeta(total sequence.Total, next string) gen.ListMeta {
	meta := gen.ListMeta{TotalItems: total.TotalItems, TotalItemsCapped: total.Capped}
	if next != "" {
		meta.NextCursor = &next
	}
	return meta
}

func sequenceFound(s sequence.Sequence) gen.SequenceFoundJSONResponse {
	return gen.SequenceFoundJSONResponse{Body: gen.SequenceResponse{Data: toSequence(s)}}
}

func runTimesResponse(times []time.Time) gen.SequenceRunTimesJSONResponse {
	return gen.SequenceRunTimesJSONResponse{Body: gen.SequencePreviewResponse{Data: gen.SequencePreview{RunTimes: times}}}
}

// toSequence is the Sequence resource: times in UTC, optional fields only
// when set.
func toSequence(s sequence.Sequence) gen.Sequence {
	steps := make([]gen.SequenceStep, len(s.StepsList))
	for i, st := range s.StepsList {
		steps[i] = gen.SequenceStep{Name: st.Name, Path: st.Path, Data: json.RawMessage(st.Data), RetryOverride: retryOverride(st.RetryOverride)}
		if len(st.DependsOn) > 0 {
			deps := st.DependsOn
			steps[i].DependsOn = &deps
		}
	}
	return gen.Sequence{
		Id: s.ID, Name: s.Name, Schedule: s.Spec, Steps: steps,
		StartAt: s.StartAt.UTC(), EndAt: utc(s.EndAt),
		CatchUp: gen.SequenceCatchUp(s.CatchUp), Overlap: gen.SequenceOverlap(s.Overlap),
		Status: gen.SequenceStatus(s.Status), NextRunAt: utc(s.NextRunAt), LastRunAt: utc(s.LastRunAt),
		CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(),
	}
}

func toRun(r sequence.Run) gen.SequenceRun {
	steps := make([]gen.SequenceRunStep, len(r.Steps))
	for i, st := range r.Steps {
		steps[i] = gen.SequenceRunStep{Name: st.Name, HookID: st.HookID, Status: gen.SequenceRunStepStatus(st.Status)}
	}
	out := gen.SequenceRun{
		Id: r.ID, SequenceID: r.SequenceID, Slot: r.Slot.UTC(), StartedAt: r.StartedAt.UTC(),
		Status: gen.SequenceRunStatus(r.Status), Trigger: gen.SequenceRunTrigger(r.Trigger),
		FinishedAt: utc(r.FinishedAt), Steps: steps,
	}
	if r.SkipReason != nil {
		reason := gen.SequenceRunSkipReason(*r.SkipReason)
		out.SkipReason = &reason
	}
	return out
}

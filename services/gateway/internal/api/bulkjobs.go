package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/bulkjob"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// BulkJobs creates, reads, lists and cancels a project's bulk jobs
// (bulkjob.Service); the gateways' runners do the work.
type BulkJobs interface {
	Create(ctx context.Context, projectID uuid.UUID, spec bulkjob.Spec) (store.BulkJob, bulkjob.DryRun, error)
	Get(ctx context.Context, projectID, id uuid.UUID) (store.BulkJob, error)
	ListPage(ctx context.Context, projectID uuid.UUID, pg bulkjob.Page) (bulkjob.JobPage, error)
	Cancel(ctx context.Context, projectID, id uuid.UUID) (store.BulkJob, error)
}

// BulkJobDeps is what /v1/bulk-jobs needs, set by app.New.
type BulkJobDeps struct {
	BulkJobs BulkJobs
}

// bulkJobManagement serves /v1/bulk-jobs. The create's body was decoded
// strictly into bulkjob.Request (strictBinder), so that a bulk action's
// limit or hookIDs is refused as an unknown field; validation is the
// bulkjob package's, which is the bulk package's.
type bulkJobManagement struct {
	BulkJobDeps
	cfg Config
}

var errBulkJobNotFound = newError(http.StatusNotFound, CodeNotFound, "bulk job not found")

// CreateBulkJob starts a job, or answers its dry run (POST /v1/bulk-jobs).
func (m bulkJobManagement) CreateBulkJob(ctx context.Context, req gen.CreateBulkJobRequestObject) (gen.CreateBulkJobResponseObject, error) {
	if req.Body == nil {
		return nil, errNoBody
	}
	spec, err := req.Body.Validate(m.cfg.MaxDataBytes)
	var (
		invalidReq *bulk.InvalidError
		tooLarge   *hook.TooLargeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return nil, newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "edit."+tooLarge.Error(),
			Detail{Field: "edit.data", Message: fmt.Sprintf("must be at most %d bytes", tooLarge.Max)})
	case errors.As(err, &invalidReq):
		return nil, invalidBulk(invalidReq)
	case err != nil:
		return nil, internal(err)
	}
	job, dry, err := m.BulkJobs.Create(ctx, projectOf(ctx), spec)
	switch {
	case errors.Is(err, bulkjob.ErrTooMany):
		return nil, newError(http.StatusConflict, CodeConflict, err.Error())
	case err != nil:
		return nil, internal(err)
	}
	if spec.DryRun {
		sample := make([]gen.BulkSampleHook, len(dry.Sample))
		for i, h := range dry.Sample {
			sample[i] = sampleHook(h)
		}
		body := gen.BulkJobDryRunResponse{Data: gen.BulkJobDryRun{DryRun: true, Total: dry.Total, Sample: sample}}
		return gen.CreateBulkJob200JSONResponse{BulkJobDryRunDoneJSONResponse: gen.BulkJobDryRunDoneJSONResponse{Body: body}}, nil
	}
	return gen.CreateBulkJob202JSONResponse{BulkJobCreatedJSONResponse: gen.BulkJobCreatedJSONResponse{
		Body:    gen.BulkJobResponse{Data: toBulkJob(job)},
		Headers: gen.BulkJobCreatedResponseHeaders{Location: "/v1/bulk-jobs/" + job.ID.String()},
	}}, nil
}

// ListBulkJobs lists the project's jobs, newest first (GET /v1/bulk-jobs).
func (m bulkJobManagement) ListBulkJobs(ctx context.Context, req gen.ListBulkJobsRequestObject) (gen.ListBulkJobsResponseObject, error) {
	if err := onlyParams(ctx, "limit", "cursor"); err != nil {
		return nil, err
	}
	pg, err := bulkjob.ValidPage(req.Params.Limit, req.Params.Cursor)
	var bad *bulk.InvalidError
	if errors.As(err, &bad) {
		return nil, invalidBulk(bad)
	}
	if err != nil {
		return nil, internal(err)
	}
	page, err := m.BulkJobs.ListPage(ctx, projectOf(ctx), pg)
	if errors.As(err, &bad) {
		return nil, invalidBulk(bad)
	}
	if err != nil {
		return nil, internal(err)
	}
	data := make([]gen.BulkJob, len(page.Jobs))
	for i, j := range page.Jobs {
		data[i] = toBulkJob(j.BulkJob)
	}
	meta := gen.ListMeta{TotalItems: page.TotalItems, TotalItemsCapped: page.Capped}
	if page.NextCursor != "" {
		meta.NextCursor = &page.NextCursor
	}
	return gen.ListBulkJobs200JSONResponse{BulkJobPageJSONResponse: gen.BulkJobPageJSONResponse{
		Body: gen.BulkJobListResponse{Data: data, Meta: meta},
	}}, nil
}

// GetBulkJob returns a job (GET /v1/bulk-jobs/{id}).
func (m bulkJobManagement) GetBulkJob(ctx context.Context, req gen.GetBulkJobRequestObject) (gen.GetBulkJobResponseObject, error) {
	id, err := uuid.Parse(req.Id)
	if err != nil {
		return nil, errBulkJobNotFound
	}
	job, err := m.BulkJobs.Get(ctx, projectOf(ctx), id)
	if err != nil {
		return nil, bulkJobError(err)
	}
	return gen.GetBulkJob200JSONResponse{BulkJobFoundJSONResponse: gen.BulkJobFoundJSONResponse{
		Body: gen.BulkJobResponse{Data: toBulkJob(job)},
	}}, nil
}

// CancelBulkJob asks a running job to stop before its next batch (POST
// /v1/bulk-jobs/{id}/cancel).
func (m bulkJobManagement) CancelBulkJob(ctx context.Context, req gen.CancelBulkJobRequestObject) (gen.CancelBulkJobResponseObject, error) {
	id, err := uuid.Parse(req.Id)
	if err != nil {
		return nil, errBulkJobNotFound
	}
	job, err := m.BulkJobs.Cancel(ctx, projectOf(ctx), id)
	if err != nil {
		return nil, bulkJobError(err)
	}
	return gen.CancelBulkJob202JSONResponse{BulkJobCancellingJSONResponse: gen.BulkJobCancellingJSONResponse{
		Body: gen.BulkJobResponse{Data: toBulkJob(job)},
	}}, nil
}

// bulkJobError maps the bulkjob package's errors to responses.
func bulkJobError(err error) error {
	var finished *bulkjob.FinishedError
	switch {
	case errors.Is(err, bulkjob.ErrNotFound):
		return errBulkJobNotFound
	case errors.As(err, &finished):
		return newError(http.StatusConflict, CodeConflict, finished.Error()+"; there is nothing to cancel")
	}
	return internal(err)
}

// toBulkJob is the BulkJob resource.
func toBulkJob(s store.BulkJob) gen.BulkJob {
	j := bulkjob.Job{BulkJob: s}
	out := gen.BulkJob{
		Id: j.ID, Action: gen.BulkJobAction(j.Action), State: gen.BulkJobState(j.State),
		Selection: gen.BulkJobSelection{StartTime: j.StartTime.UTC(), EndTime: j.EndTime.UTC(), EndpointKey: j.EndpointKey(),
			SequenceID: j.SequenceID},
		Total: j.Total, Selected: j.Selected, Affected: j.Affected, Skipped: j.Skipped(), Batches: int(j.Batches),
		Progress: j.Progress(), CreatedAt: j.CreatedAt.UTC(), UpdatedAt: j.UpdatedAt.UTC(),
	}
	if len(j.Tags) > 0 {
		out.Selection.Tags = &j.Tags
	}
	if j.NewPath != nil || j.NewData != nil || j.NewPostAt != nil {
		out.Edit = &gen.BulkEdit{Path: j.NewPath}
		if j.NewData != nil {
			out.Edit.Data = &j.NewData
		}
		if j.NewPostAt != nil {
			at := j.NewPostAt.UTC()
			out.Edit.PostAt = &at
		}
	}
	if j.ErrorCode != nil {
		out.Error = &gen.BulkJobError{Code: *j.ErrorCode}
		if j.Error != nil {
			out.Error.Message = *j.Error
		}
	}
	if j.FinishedAt != nil {
		at := j.FinishedAt.UTC()
		out.FinishedAt = &at
	}
	return out
}

// sampleHook is a hook of a dry run's sample.
func sampleHook(h bulk.Sampled) gen.BulkSampleHook {
	s := gen.BulkSampleHook{Id: h.ID, Path: h.Path, Status: gen.HookStatus(h.Status), PostAt: h.PostAt.UTC()}
	if len(h.Tags) > 0 {
		s.Tags = &h.Tags
	}
	return s
}

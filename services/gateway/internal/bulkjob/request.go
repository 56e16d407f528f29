// Package bulkjob runs bulk actions (retry, replay, cancel) over a
// time-range selection of any size as jobs: a job is created with its
// selection's size counted, then worked on by the gateways' runners in
// batches, each batch one short transaction that acts on the next hooks
// after the job's cursor and records the progress with them, so that a
// job survives its gateway (another takes it once the lease runs out),
// never acts on a hook twice, and holds no lock for longer than a batch.
// A job can be cancelled between batches, and its final report says how
// many hooks it selected and acted on (docs/choices.md, "Bulk jobs").
package bulkjob

import (
	"errors"

	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

// Request is the body of POST /v1/bulk-jobs: the action, the time-range
// filter of a range bulk action without its limit (a job takes the whole
// selection), an edit for retry and replay, and DryRun.
type Request struct {
	Action      *string           `json:"action"`
	StartTime   *string           `json:"startTime"`
	EndTime     *string           `json:"endTime"`
	EndpointKey *string           `json:"endpointKey"`
	SequenceID  *string           `json:"sequenceID"`
	Tags        []string          `json:"tags"`
	Edit        *hook.EditRequest `json:"edit"`
	DryRun      bool              `json:"dryRun"`
}

// Spec is a validated Request.
type Spec struct {
	Action bulk.Action
	// Range is the selection; its Limit is not used.
	Range bulk.Range
	// Edit is nil for none.
	Edit   *hook.Edit
	DryRun bool
}

// Validate checks the request and returns its Spec, or a
// *bulk.InvalidError naming every field at fault (a *hook.TooLargeError
// for an edit's data over maxDataBytes), as a bulk action's request is
// checked.
func (r Request) Validate(maxDataBytes int) (Spec, error) {
	limit := bulk.MaxLimit
	br := bulk.Request{StartTime: r.StartTime, EndTime: r.EndTime, Limit: &limit, EndpointKey: r.EndpointKey,
		SequenceID: r.SequenceID, Tags: r.Tags, Edit: r.Edit}
	action := bulk.Action("")
	if r.Action != nil {
		action = bulk.Action(*r.Action)
	}
	if !action.Valid() {
		bad := bulk.Problem{Field: "action", Message: `must be "retry", "replay" or "cancel"`}
		if r.Action == nil {
			bad.Message = `is required: "retry", "replay" or "cancel"`
		}
		ps := []bulk.Problem{bad}
		if _, err := br.Validate(); err != nil {
			var inv *bulk.InvalidError
			if !errors.As(err, &inv) {
				return Spec{}, err
			}
			ps = append(ps, inv.Problems...)
		}
		return Spec{}, &bulk.InvalidError{Problems: ps}
	}
	o, err := br.Order(action, maxDataBytes)
	if err != nil {
		return Spec{}, err
	}
	if o.Range == nil {
		return Spec{}, &bulk.InvalidError{Problems: []bulk.Problem{{Field: "startTime", Message: "is required"}}}
	}
	return Spec{Action: action, Range: *o.Range, Edit: o.Edit, DryRun: r.DryRun}, nil
}

package dashboard

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
)

// bulkPage is the data of bulk.html: the confirmation (Count hooks will
// be touched, the first of them in Sample) or, once Done, the result
// (Affected).
type bulkPage struct {
	Action string
	// Form is the selection as given, echoed in the confirmation's form.
	StartTime, EndTime, Limit, EndpointKey string
	Count                                  int64
	Sample                                 []bulk.Sampled
	// QuotaRefused says that the replay would pass the quota's hard cap.
	QuotaRefused bool
	// Changed says that the count differs from the one confirmed.
	Changed  bool
	Done     bool
	Affected int64
	Problems []bulk.Problem
}

// bulkAction is POST /dashboard/p/{project}/bulk/{action}: without
// confirm, the page asking to confirm with the count of hooks the action
// would touch now and the first of them (the action's dry run); with
// confirm and the count shown, the action, if the count is still the same
// (else the new count, to confirm again).
func (d *Dashboard) bulkAction(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	action := bulk.Action(r.PathValue("action"))
	if !action.Valid() {
		Error(w, r, http.StatusNotFound, "There is no such action.")
		return
	}
	page := bulkPage{
		Action: string(action), StartTime: r.PostFormValue("startTime"), EndTime: r.PostFormValue("endTime"),
		Limit: r.PostFormValue("limit"), EndpointKey: r.PostFormValue("endpointKey"),
	}
	sel, err := page.request().Validate()
	var bad *bulk.InvalidError
	if errors.As(err, &bad) {
		page.Problems = bad.Problems
		RenderStatus(w, r, http.StatusBadRequest, "bulk.html", page)
		return
	}
	if err != nil {
		d.fault(w, r, "bulk request", err)
		return
	}
	dry, err := d.Bulk.Run(r.Context(), p.ID, action, bulk.Order{Selection: sel, DryRun: true})
	if err != nil {
		d.fault(w, r, "bulk dry run", err)
		return
	}
	page.Count, page.Sample, page.QuotaRefused = dry.Affected, dry.Sample, dry.QuotaRefused
	confirmed, err := strconv.ParseInt(r.PostFormValue("count"), 10, 64)
	if r.PostFormValue("confirm") == "" || err != nil || confirmed != page.Count {
		page.Changed = r.PostFormValue("confirm") != ""
		Render(w, r, "bulk.html", page)
		return
	}
	res, err := d.Bulk.Run(r.Context(), p.ID, action, bulk.Order{Selection: sel})
	if d.bulkFailed(w, r, err) {
		return
	}
	page.Affected = res.Affected
	page.Done = true
	d.Log.Info("dashboard bulk action", "project_id", p.ID, "user_id", sessionFrom(r).user.ID,
		"action", action, "counted", page.Count, "affected", page.Affected)
	Render(w, r, "bulk.html", page)
}

// request is the form as the API's bulk body: a time-range selection.
func (b bulkPage) request() bulk.Request {
	req := bulk.Request{StartTime: &b.StartTime, EndTime: &b.EndTime}
	if n, err := strconv.Atoi(b.Limit); err == nil {
		req.Limit = &n
	} else if b.Limit != "" {
		bad := -1 // Validate names limit as out of range
		req.Limit = &bad
	}
	if b.EndpointKey != "" {
		req.EndpointKey = &b.EndpointKey
	}
	return req
}

// bulkFailed answers a bulk service's error, if any: a replay past the
// quota's hard cap is the people's problem, anything else ours.
func (d *Dashboard) bulkFailed(w http.ResponseWriter, r *http.Request, err error) bool {
	var exhausted *quota.ExhaustedError
	switch {
	case err == nil:
		return false
	case errors.As(err, &exhausted):
		Error(w, r, http.StatusConflict, "The replay would pass the project's hook quota: nothing was replayed.")
	default:
		d.fault(w, r, "bulk action", err)
	}
	return true
}

package bulkjob

import "github.com/sundial-run/sundial/services/gateway/internal/store"

// Job is a stored job with what the API and the dashboard derive from it,
// so that both show the same figures.
type Job struct {
	store.BulkJob
}

// Ended says the job will not run again: completed, cancelled or failed.
func (j Job) Ended() bool {
	switch j.State {
	case StateCompleted, StateCancelled, StateFailed:
		return true
	}
	return false
}

// Skipped is how many hooks the job read but did not act on (they changed
// state meanwhile, or the key rule held them back): final once it ended.
func (j Job) Skipped() int64 {
	return max(0, j.Selected-j.Affected)
}

// Progress estimates how far the job is, from 0 to 1: the hooks read over
// the total counted at creation, which hooks that change meanwhile make an
// estimate, so it is capped at 1, and is 1 once the job completed.
func (j Job) Progress() float64 {
	switch {
	case j.State == StateCompleted:
		return 1
	case j.Total <= 0:
		return 0
	}
	return min(1, float64(j.Selected)/float64(j.Total))
}

// EndpointKey is the endpointKey the job was created with, nil for none: a
// key with a query string is kept as the exact path, one without as the
// path's base (bulk.Range.Paths).
func (j Job) EndpointKey() *string {
	if j.Path != nil {
		return j.Path
	}
	return j.PathBase
}

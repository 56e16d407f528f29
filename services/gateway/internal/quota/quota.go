// Package quota counts the hooks a project creates per billing period (a
// calendar month in UTC) against its plan, and reports the count in the
// <Prefix>-HookQuota-* response headers.
package quota

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Usage is a project's standing in its current billing period.
type Usage struct {
	Limit    int64     // the plan's quota
	Used     int64     // hooks created in the period
	HardCap  int64     // the most hooks the period accepts
	ResetsAt time.Time // the end of the period
	Now      time.Time // the database clock when counted
}

// Remaining is the quota left, never negative: usage may pass the quota,
// up to the hard cap.
func (u Usage) Remaining() int64 {
	return max(0, u.Limit-u.Used)
}

// RetryAfter is how long until the period resets, rounded up to a whole
// second and at least one, for the Retry-After header.
func (u Usage) RetryAfter() int64 {
	secs := int64(math.Ceil(u.ResetsAt.Sub(u.Now).Seconds()))
	return max(1, secs)
}

// SetHeaders writes the quota headers, named with the deployment's prefix.
// The names are stored as spelled (HookQuota, not Go's canonical Hookquota):
// header names are case-insensitive, but some clients match them exactly.
func (u Usage) SetHeaders(h http.Header, prefix string) {
	h[prefix+"-HookQuota-Limit"] = []string{strconv.FormatInt(u.Limit, 10)}
	h[prefix+"-HookQuota-Usage"] = []string{strconv.FormatInt(u.Used, 10)}
	h[prefix+"-HookQuota-Remaining"] = []string{strconv.FormatInt(u.Remaining(), 10)}
	h[prefix+"-HookQuota-Resets-At"] = []string{u.ResetsAt.UTC().Format(time.RFC3339)}
}

// ExhaustedError refuses a hook past the hard cap. Usage is the standing
// without the refused hook.
type ExhaustedError struct {
	Usage Usage
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("hook quota exhausted: %d of %d used, hard cap %d", e.Usage.Used, e.Usage.Limit, e.Usage.HardCap)
}

// ErrExhausted matches every *ExhaustedError with errors.Is.
var ErrExhausted = errors.New("hook quota exhausted")

// Is makes errors.Is(err, ErrExhausted) hold.
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }

// HardCap is quota × percent / 100, computed without overflowing for any
// quota the schema allows.
func HardCap(quota int64, percent int32) int64 {
	p := int64(percent)
	whole, part := quota/100, quota%100
	if whole > math.MaxInt64/p {
		return math.MaxInt64
	}
	return whole*p + part*p/100
}

// Count counts one hook for the project in q's transaction. Past the hard
// cap it returns an *ExhaustedError, and the caller must roll back so the
// refused hook is neither created nor counted.
func Count(ctx context.Context, q *store.Queries, projectID uuid.UUID, plan store.GetProjectPlanRow) (Usage, error) {
	row, err := q.CountHookInPeriod(ctx, projectID)
	if err != nil {
		return Usage{}, fmt.Errorf("count hook: %w", err)
	}
	u := Usage{
		Limit:    plan.PlanQuota,
		Used:     row.HooksCreated,
		HardCap:  HardCap(plan.PlanQuota, plan.PlanHardCapPercent),
		ResetsAt: row.PeriodEnd,
		Now:      row.DbNow,
	}
	if u.Used > u.HardCap {
		u.Used--
		return u, &ExhaustedError{Usage: u}
	}
	return u, nil
}

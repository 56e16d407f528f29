// Package quota counts the hooks a project creates per billing period (a
// calendar month in UTC, by the database clock) against its plan, refuses
// hooks past the plan's hard cap, claims the usage-threshold alerts (75, 100
// and 150 % of the quota) once per period, stores their alerts in the
// claiming transaction (the alerts table, the notifier's outbox), publishes
// them, and reports the standing in the <Prefix>-HookQuota-* response
// headers.
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
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Usage is a project's standing in its current billing period.
type Usage struct {
	Limit       int64     // the plan's quota
	Used        int64     // hooks created in the period
	HardCap     int64     // the most hooks the period accepts
	PeriodStart time.Time // the start of the period
	ResetsAt    time.Time // the end of the period
	Now         time.Time // the database clock when counted
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

// ExhaustedError refuses hooks past the hard cap. Usage is the standing
// without the refused hooks.
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

// HardCap is quota × percent / 100, rounded down, computed without
// overflowing for any quota the schema allows.
func HardCap(quota int64, percent int32) int64 {
	p := int64(percent)
	whole, part := quota/100, quota%100
	if whole > math.MaxInt64/p {
		return math.MaxInt64
	}
	return whole*p + part*p/100
}

// Charge is the outcome of counting hooks: the standing after them, and the
// usage thresholds they reached first in the period, whose alerts the
// counting transaction has claimed.
type Charge struct {
	Usage   Usage
	Crossed []Crossing
}

// Add counts n hooks (n >= 1) created in q's transaction against the
// project's quota for the current billing period, and claims the alert of
// every usage threshold (Thresholds: 75, 100, 150 % of the quota) that the
// count reaches for the first time in the period. Every path that creates
// hooks calls it (POST /v1/hooks with n = 1, bulk replay with n = the hooks
// it creates), inside the transaction that inserts them:
//
//   - Past the hard cap it returns an *ExhaustedError whose Usage is the
//     standing without the n hooks. The caller must roll back, so that
//     nothing is created or counted (n hooks that do not all fit are refused
//     together), and answer 429 quota_exhausted with
//     Retry-After = Usage.RetryAfter() and the Usage's quota headers.
//   - Otherwise, after the transaction commits, the caller hands
//     Charge.Crossed to Alerts.Announce (an empty list is fine). If the
//     transaction rolls back instead, the claims roll back with it and the
//     crossings must be dropped.
//
// Add locks the project's row of the period until the transaction ends, so
// concurrent creates of one project are counted one after the other: call
// it as late as possible, just before commit.
func Add(ctx context.Context, q *store.Queries, projectID uuid.UUID, n int64) (Charge, error) {
	if n < 1 {
		return Charge{}, fmt.Errorf("count %d hooks: want at least one", n)
	}
	row, err := q.AddHooksToPeriod(ctx, store.AddHooksToPeriodParams{ProjectID: projectID, Hooks: n})
	if err != nil {
		return Charge{}, fmt.Errorf("count hooks: %w", postgres.Translate(err))
	}
	u := Usage{
		Limit:       row.PlanQuota,
		Used:        row.HooksCreated,
		HardCap:     HardCap(row.PlanQuota, row.PlanHardCapPercent),
		PeriodStart: row.PeriodStart,
		ResetsAt:    row.PeriodEnd,
		Now:         row.DbNow,
	}
	if u.Used > u.HardCap {
		u.Used -= n
		return Charge{Usage: u}, &ExhaustedError{Usage: u}
	}
	crossed := reached(projectID, u, row.AlertedThresholds)
	if len(crossed) > 0 {
		percents := make([]int32, len(crossed))
		for i, c := range crossed {
			percents[i] = c.Percent
		}
		err := q.ClaimQuotaThresholds(ctx, store.ClaimQuotaThresholdsParams{
			Thresholds: percents, ProjectID: projectID, PeriodStart: u.PeriodStart,
		})
		if err != nil {
			return Charge{}, fmt.Errorf("claim quota thresholds: %w", postgres.Translate(err))
		}
		if err := storeAlerts(ctx, q, crossed); err != nil {
			return Charge{}, err
		}
	}
	return Charge{Usage: u, Crossed: crossed}, nil
}

// storeAlerts writes the alerts of the crossings into the alerts table (the
// outbox) in the claiming transaction: once it commits, the notifier sends
// them even if the event published afterwards is lost.
func storeAlerts(ctx context.Context, q *store.Queries, crossed []Crossing) error {
	for _, c := range crossed {
		body, err := proto.Marshal(c.Alert())
		if err != nil {
			return fmt.Errorf("encode alert %s: %w", c.AlertID(), err)
		}
		_, err = q.InsertAlert(ctx, store.InsertAlertParams{
			ID: c.AlertID(), ProjectID: c.ProjectID, Kind: AlertKind, Body: body, OccurredAt: c.At,
		})
		if err != nil {
			return fmt.Errorf("store alert %s: %w", c.AlertID(), postgres.Translate(err))
		}
	}
	return nil
}

// Limits is what every authenticated request reports and enforces: the
// project's quota standing and the rate limit of its API keys.
type Limits struct {
	Usage Usage
	// RatePerSecond refills each API key's token bucket; RateBurst is its
	// size, the most requests a key may make at once.
	RatePerSecond int
	RateBurst     int
}

// Read returns the project's limits without counting anything: two primary
// key look-ups in one query. An unknown project is postgres.ErrNotFound.
func Read(ctx context.Context, q *store.Queries, projectID uuid.UUID) (Limits, error) {
	row, err := q.GetProjectLimits(ctx, projectID)
	if err != nil {
		return Limits{}, fmt.Errorf("read project limits: %w", postgres.Translate(err))
	}
	return Limits{
		Usage: Usage{
			Limit:       row.PlanQuota,
			Used:        row.HooksCreated,
			HardCap:     HardCap(row.PlanQuota, row.PlanHardCapPercent),
			PeriodStart: row.PeriodStart,
			ResetsAt:    row.PeriodEnd,
			Now:         row.DbNow,
		},
		RatePerSecond: int(row.RateLimitPerSecond),
		RateBurst:     int(row.RateLimitBurst),
	}, nil
}

// Reader reads projects' limits for the API's middleware.
type Reader struct {
	q *store.Queries
}

// NewReader returns a Reader on q.
func NewReader(q *store.Queries) *Reader {
	return &Reader{q: q}
}

// Read is the package's Read on the Reader's queries.
func (r *Reader) Read(ctx context.Context, projectID uuid.UUID) (Limits, error) {
	return Read(ctx, r.q, projectID)
}

// RateLimit is a project's rate limit per API key.
type RateLimit struct {
	PerSecond int
	Burst     int
}

// SetRateLimit changes the rate limit of the project's keys, a plan
// setting. It applies to each gateway replica's buckets at their next
// look-up of the key: within the replica's key cache time
// (SUNDIAL_GATEWAY_KEY_CACHE_TTL). An unknown project is postgres.ErrNotFound.
func SetRateLimit(ctx context.Context, q *store.Queries, projectID uuid.UUID, r RateLimit) error {
	if r.PerSecond < 1 || r.PerSecond > 100_000 || r.Burst < 1 || r.Burst > 1_000_000 {
		return fmt.Errorf("rate limit: want 1 to 100000 per second and a burst of 1 to 1000000, got %d and %d", r.PerSecond, r.Burst)
	}
	n, err := q.SetProjectRateLimit(ctx, store.SetProjectRateLimitParams{
		ID: projectID, RateLimitPerSecond: int32(r.PerSecond), RateLimitBurst: int32(r.Burst),
	})
	if err != nil {
		return fmt.Errorf("set rate limit: %w", postgres.Translate(err))
	}
	if n == 0 {
		return fmt.Errorf("set rate limit: %w", postgres.ErrNotFound)
	}
	return nil
}

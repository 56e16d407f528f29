package sundial

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"net/url"
	"strconv"
	"time"
)

// HookStatus is where a hook stands.
type HookStatus string

// The statuses of a hook.
const (
	// StatusPending: waiting for its first delivery, being delivered, or
	// waiting for an async answer.
	StatusPending HookStatus = "pending"
	// StatusRetry: an attempt failed and another is scheduled at TryAt.
	StatusRetry HookStatus = "retry"
	// StatusCompleted: the receiver answered 2xx (not 202) or acked.
	StatusCompleted HookStatus = "completed"
	// StatusFailed: the retries ran out.
	StatusFailed HookStatus = "failed"
)

// Hook is a scheduled HTTPS POST and where it stands.
type Hook struct {
	ID string `json:"id"`
	// Path is appended to Domain: the hook goes to https://<domain><path>.
	Path string `json:"path"`
	// Domain is the project's domain when the hook was scheduled.
	Domain string          `json:"domain"`
	Data   json.RawMessage `json:"data"`
	// PostAt is when the hook is due, in UTC. For a hook scheduled at a
	// local time, where PostAtLocal falls under the rules of the tz
	// database release TZData: a later release moves it.
	PostAt time.Time `json:"postAt"`
	// PostAtLocal and Timezone are the wall time the hook was scheduled
	// at, and TZData the tz database release that resolved it; empty for
	// a hook scheduled by instant or delay.
	PostAtLocal string     `json:"postAtLocal,omitempty"`
	Timezone    string     `json:"timezone,omitempty"`
	TZData      string     `json:"tzdata,omitempty"`
	Status      HookStatus `json:"status"`
	Attempts    int        `json:"attempts"`
	// PostDurationSeconds is the last attempt's HTTP exchange, in seconds.
	PostDurationSeconds float64   `json:"postDurationSeconds"`
	CreatedAt           time.Time `json:"createdAt"`
	UpdatedAt           time.Time `json:"updatedAt"`
	// FailureError is the last failed attempt's error, in words.
	FailureError string `json:"failureError,omitempty"`
	// FailureClass is the last failed attempt's class: "dns", "connect",
	// "tls", "timeout", "redirect", "4xx", "410", "429", "5xx",
	// "too_large", "listener", "nack", "async_timeout", "refused" or "lost".
	FailureClass string `json:"failureClass,omitempty"`
	// TryAt is when the next attempt is due (status retry), else when the
	// last attempt was made; zero before the first.
	TryAt         time.Time         `json:"tryAt,omitzero"`
	RetryOverride *RetryOverride    `json:"retryOverride,omitempty"`
	SequenceData  *HookSequenceData `json:"sequenceData,omitempty"`
	// WasNotified says a failure notification was sent for this hook.
	WasNotified bool `json:"wasNotified,omitempty"`
	// Key is the key the hook was scheduled with, if any.
	Key string `json:"key,omitempty"`
	// Tags are the hook's tags, in the order given; nil for none.
	Tags []string `json:"tags,omitempty"`
	// OrderingKey is the ordering key the hook was scheduled with, if any.
	OrderingKey string `json:"orderingKey,omitempty"`
}

// HookSequenceData is set on hooks that a sequence's run created.
type HookSequenceData struct {
	SequenceID        string    `json:"sequenceID"`
	StepName          string    `json:"stepName"`
	SequenceLastRunAt time.Time `json:"sequenceLastRunAt,omitzero"`
}

// The retry strategies.
const (
	StrategyFixed       = "fixed"
	StrategyExponential = "exponential"
)

// RetryOverride is a hook's own retry settings, instead of the project's.
// The delay before retry n (from 1) is DelaySecs with StrategyFixed, and
// min(DelaySecs × BackoffFactor^(n-1), MaxDelaySecs) with
// StrategyExponential.
type RetryOverride struct {
	// MinRetries is the number of retries after the first attempt (1-15).
	MinRetries int `json:"minRetries"`
	// DelaySecs is 5 to 60.
	DelaySecs int    `json:"delaySecs"`
	Strategy  string `json:"strategy"`
	// BackoffFactor is 1.1 to 4.0 (default 2.0).
	BackoffFactor float64 `json:"backoffFactor,omitempty"`
	// MaxDelaySecs is 60 to 3600.
	MaxDelaySecs int `json:"maxDelaySecs,omitempty"`
	// Jitter multiplies each delay by a random factor from 0.8 to 1.2.
	Jitter bool `json:"jitter,omitempty"`
}

// ScheduleHookRequest is a hook to schedule. Give exactly one of PostAt,
// PostAtLocal (with Timezone) and PostIn.
type ScheduleHookRequest struct {
	// Path is where to deliver, appended to the project's domain: it starts
	// with "/", a query string is allowed.
	Path string `json:"path"`
	// Data is any JSON object (a struct, a map, a json.RawMessage...).
	Data any `json:"data"`
	// PostAt is an instant; it is stored in UTC.
	PostAt time.Time `json:"postAt,omitzero"`
	// PostAtLocal is a wall-clock time, YYYY-MM-DDTHH:MM:SS, in Timezone
	// (see LocalTime). A time skipped by a DST change becomes the first
	// moment after the gap; a time that happens twice is the earlier one.
	PostAtLocal string `json:"postAtLocal,omitempty"`
	// Timezone is an IANA zone name (Europe/Paris), with PostAtLocal only.
	Timezone string `json:"timezone,omitempty"`
	// PostIn is a delay from now, such as "90s" or "1h30m" (see Delay).
	PostIn        string         `json:"postIn,omitempty"`
	RetryOverride *RetryOverride `json:"retryOverride,omitempty"`
	// Key names the hook in the project until it has finished (1 to 255
	// printable ASCII characters): scheduling with the key of a pending
	// hook that was never claimed replaces it (a reminder rescheduled
	// without looking it up); while that hook is being delivered or waits
	// for a retry or an async answer, Schedule is a 409 APIError naming
	// "key". GetByKey and DeleteByKey find the hook.
	Key string `json:"key,omitempty"`
	// Tags are up to 10 tags, each 1 to 64 characters from A-Z a-z 0-9
	// _ . : -, none repeated, which ListHooksParams.Tags and
	// BulkActionRequest.Tags select by.
	Tags []string `json:"tags,omitempty"`
	// OrderingKey puts the hook in line with the project's other hooks of
	// this key (1 to 255 printable ASCII characters): they are delivered
	// one at a time, in order of PostAt (CreatedAt breaking ties), each
	// after the previous has completed or failed for good. When one fails
	// for good, Project.OrderingOnFailure says whether the key moves on or
	// holds (OrderingKeyService). Many hooks share one; unlike Key, it
	// replaces nothing. It cannot be changed later; replays copy it.
	OrderingKey string `json:"orderingKey,omitempty"`
	// IdempotencyKey makes repeats of this request safe for 24 hours: a
	// repeat answers the hook the first one created. When empty, Schedule
	// makes a fresh key, so that its own retries never create a second
	// hook. Give your own to make your retries of Schedule safe too.
	IdempotencyKey string `json:"-"`
}

// LocalTime formats t's wall clock as PostAtLocal wants it, dropping its
// location: LocalTime(time.Date(2030, 12, 1, 9, 0, 0, 0, time.UTC)) is
// "2030-12-01T09:00:00".
func LocalTime(t time.Time) string {
	return t.Format("2006-01-02T15:04:05")
}

// Delay formats d as PostIn wants it (days, hours, minutes, seconds):
// Delay(90*time.Minute) is "1h30m". d is rounded up to a whole second; the
// API takes 1 s to 365 days.
func Delay(d time.Duration) string {
	secs := int64((d + time.Second - 1) / time.Second)
	if secs <= 0 {
		return "0s"
	}
	var out []byte
	for _, u := range []struct {
		secs int64
		unit byte
	}{{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}} {
		if n := secs / u.secs; n > 0 {
			out = strconv.AppendInt(out, n, 10)
			out = append(out, u.unit)
			secs -= n * u.secs
		}
	}
	return string(out)
}

// ListHooksParams filters and pages a listing; zero fields are left out.
type ListHooksParams struct {
	Status HookStatus
	// Limit is the page size, 1 to 1000 (default 100).
	Limit int
	// Cursor is the previous page's NextCursor (All follows it for you).
	Cursor string
	// SortBy is "postAt" or "createdAt" (default).
	SortBy string
	// SortOrder is "ASC" or "DESC" (default).
	SortOrder string
	// The time filters are exclusive.
	PostAtBefore, PostAtAfter, CreatedAtBefore, CreatedAtAfter time.Time
	// Tags keeps the hooks that have every one of them (at most 10).
	Tags []string
	// OrderingKey keeps the hooks of this ordering key (compared byte for
	// byte); empty for any.
	OrderingKey string
}

func (p ListHooksParams) values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	setTime := func(k string, t time.Time) {
		if !t.IsZero() {
			v.Set(k, t.Format(time.RFC3339Nano))
		}
	}
	set("status", string(p.Status))
	if p.Limit != 0 {
		v.Set("limit", strconv.Itoa(p.Limit))
	}
	set("cursor", p.Cursor)
	set("sortBy", p.SortBy)
	set("sortOrder", p.SortOrder)
	setTime("postAtBefore", p.PostAtBefore)
	setTime("postAtAfter", p.PostAtAfter)
	setTime("createdAtBefore", p.CreatedAtBefore)
	setTime("createdAtAfter", p.CreatedAtAfter)
	for _, t := range p.Tags {
		v.Add("tag", t)
	}
	set("orderingKey", p.OrderingKey)
	return v
}

// HookPage is one page of a listing.
type HookPage struct {
	Data []Hook   `json:"data"`
	Meta ListMeta `json:"meta"`
}

// ListMeta describes a listing as a whole.
type ListMeta struct {
	// TotalItems counts the hooks that match the filters, exactly up to
	// 100,000 (then TotalItemsCapped is set).
	TotalItems       int64 `json:"totalItems"`
	TotalItemsCapped bool  `json:"totalItemsCapped"`
	// NextCursor is empty on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// HookAttempt is one delivery attempt whose result was recorded.
type HookAttempt struct {
	Attempt         int       `json:"attempt"`
	StartedAt       time.Time `json:"startedAt"`
	DurationSeconds float64   `json:"durationSeconds"`
	// Outcome is "success", "failure" or "async".
	Outcome    string `json:"outcome"`
	StatusCode int    `json:"statusCode,omitempty"`
	Error      string `json:"error,omitempty"`
	// FailureClass is a failed attempt's class (see Hook.FailureClass).
	FailureClass    string            `json:"failureClass,omitempty"`
	ResponseExcerpt string            `json:"responseExcerpt,omitempty"`
	Async           *HookAttemptAsync `json:"async,omitempty"`
	// AckBody is what the receiver POSTed to the ack or nack URL.
	AckBody json.RawMessage `json:"ackBody,omitempty"`
	// RequestHeaders are the headers of the request as Sundial sent it,
	// names spelled as sent, and ResponseHeaders the receiver's answer's:
	// each name with its values, bounded, credentials "[redacted]"; nil
	// when none was recorded. A plain map, not an http.Header, whose Get
	// would miss a name not in canonical form ("Sundial-Ack-URL").
	RequestHeaders  map[string][]string `json:"requestHeaders,omitempty"`
	ResponseHeaders map[string][]string `json:"responseHeaders,omitempty"`
	// RequestHeadersOmitted and ResponseHeadersOmitted count the header
	// lines the bounds left out (at most 50 lines and 8 KiB a side).
	RequestHeadersOmitted  int `json:"requestHeadersOmitted,omitempty"`
	ResponseHeadersOmitted int `json:"responseHeadersOmitted,omitempty"`
}

// HookAttemptAsync is the async side of an attempt answered 202.
type HookAttemptAsync struct {
	// State is "waiting", "acked", "nacked" or "expired".
	State       string    `json:"state"`
	Deadline    time.Time `json:"deadline"`
	TimeoutSecs int       `json:"timeoutSecs,omitempty"`
}

// BulkActionRequest selects hooks either by id (HookIDs) or by a range of
// postAt (StartTime <= postAt < EndTime, at most Limit hooks, optionally
// narrowed by EndpointKey, SequenceID and Tags), not both. To retry or
// replay one hook, select it by HookIDs.
type BulkActionRequest struct {
	HookIDs   []string  `json:"hookIDs,omitempty"`
	StartTime time.Time `json:"startTime,omitzero"`
	EndTime   time.Time `json:"endTime,omitzero"`
	Limit     int       `json:"limit,omitempty"`
	// EndpointKey selects hooks by path: with a query string it matches
	// exactly, without one it matches the path whatever its query.
	EndpointKey string `json:"endpointKey,omitempty"`
	SequenceID  string `json:"sequenceID,omitempty"`
	// Tags selects the hooks of the range that have every one of them.
	Tags []string `json:"tags,omitempty"`
	// Edit gives the hooks a retry moves, or the copies a replay creates,
	// new values (BulkRetry and BulkReplay only).
	Edit *HookEdit `json:"edit,omitempty"`
	// DryRun asks what the action would do now and changes nothing: the
	// result's Affected and Sample say what it would act on.
	DryRun bool `json:"dryRun,omitempty"`
}

// HookEdit is new values for a retried or replayed hook, each checked as
// when scheduling a hook; give at least one. A zero field keeps the
// hook's own. The hook's attempts stay with it (retry) or with the
// original (replay).
type HookEdit struct {
	// Data is any JSON object.
	Data any `json:"data,omitempty"`
	// Path is delivered to under the hook's domain.
	Path string `json:"path,omitempty"`
	// PostAt is when the hook is due; a past instant is due at once.
	PostAt time.Time `json:"postAt,omitzero"`
}

// RetryIDsRequest lists failed hooks to retry. ProjectID must be the API
// key's project.
type RetryIDsRequest struct {
	ProjectID string   `json:"projectID"`
	HookIDs   []string `json:"hookIDs"`
	// DryRun asks what the retry would do now, changing nothing.
	DryRun bool `json:"dryRun,omitempty"`
}

// BulkResult says how many hooks an action applied to, or for a dry run
// would apply to.
type BulkResult struct {
	Affected int `json:"affected"`
	// DryRun says the answer is a dry run's: nothing was changed.
	DryRun bool `json:"dryRun,omitempty"`
	// Sample is a dry run's first 10 hooks the action would act on
	// (replay: the originals it would copy), earliest postAt first.
	Sample []BulkSampleHook `json:"sample,omitempty"`
	// QuotaRefused says a replay's dry run found that the replay would pass
	// the quota's hard cap, and be refused.
	QuotaRefused bool `json:"quotaRefused,omitempty"`
}

// BulkSampleHook is a hook of a dry run's sample, as it stands.
type BulkSampleHook struct {
	ID     string     `json:"id"`
	Path   string     `json:"path"`
	Status HookStatus `json:"status"`
	PostAt time.Time  `json:"postAt"`
	Tags   []string   `json:"tags,omitempty"`
}

// HookService is the hooks part of the API.
type HookService struct{ c *Client }

// Schedule creates a hook (POST /v1/hooks). It always sends an
// Idempotency-Key (req.IdempotencyKey, or a fresh one), so that it is
// retried safely.
func (s *HookService) Schedule(ctx context.Context, req ScheduleHookRequest) (Hook, error) {
	key := req.IdempotencyKey
	if key == "" {
		var err error
		if key, err = newIdempotencyKey(); err != nil {
			return Hook{}, err
		}
	}
	return get[Hook](ctx, s.c, call{
		method: "POST", path: "/hooks", body: req,
		header: map[string][]string{"Idempotency-Key": {key}},
	})
}

// ScheduleHooksRequest is a batch of 1 to MaxBatchHooks hooks to schedule
// together, all or none.
type ScheduleHooksRequest struct {
	// Hooks are scheduled in this order; their own IdempotencyKey is not
	// sent (a batch has one key, below).
	Hooks []ScheduleHookRequest `json:"hooks"`
	// IdempotencyKey makes repeats of the batch safe for 24 hours: a repeat
	// answers the hooks the first one created. When empty, ScheduleBatch
	// makes a fresh key, as Schedule does.
	IdempotencyKey string `json:"-"`
}

// MaxBatchHooks bounds the hooks of one ScheduleBatch. The request's body
// is also bounded (16 MiB): batches of large data must be smaller.
const MaxBatchHooks = 1000

// ScheduleBatch creates every hook of req, all or none, in one request
// (POST /v1/hooks/batch), and returns them in req's order. A bad hook
// fails the whole batch with an *APIError naming each problem as
// hooks[i].field; a batch that does not fit under the quota's hard cap is
// refused whole (429). Like Schedule, it always sends an Idempotency-Key.
func (s *HookService) ScheduleBatch(ctx context.Context, req ScheduleHooksRequest) ([]Hook, error) {
	key := req.IdempotencyKey
	if key == "" {
		var err error
		if key, err = newIdempotencyKey(); err != nil {
			return nil, err
		}
	}
	return get[[]Hook](ctx, s.c, call{
		method: "POST", path: "/hooks/batch", body: req,
		header: map[string][]string{"Idempotency-Key": {key}},
	})
}

// newIdempotencyKey is 128 random bits in hex.
func newIdempotencyKey() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("sundial: idempotency key: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// List returns one page of the project's hooks (GET /v1/hooks).
func (s *HookService) List(ctx context.Context, p ListHooksParams) (HookPage, error) {
	var page HookPage
	err := s.c.do(ctx, call{method: "GET", path: "/hooks", query: p.values()}, &page)
	return page, err
}

// All walks every page of a listing from p.Cursor on, following each
// page's cursor until the last, and yields each hook. An error is yielded
// once, with a zero Hook, and ends the walk.
//
//	for h, err := range client.Hooks.All(ctx, sundial.ListHooksParams{Status: sundial.StatusFailed}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(h.ID)
//	}
func (s *HookService) All(ctx context.Context, p ListHooksParams) iter.Seq2[Hook, error] {
	return walk(func(cursor string) ([]Hook, string, error) {
		p.Cursor = cursor
		page, err := s.List(ctx, p)
		return page.Data, page.Meta.NextCursor, err
	}, p.Cursor)
}

// Get returns one hook (GET /v1/hooks/{id}).
func (s *HookService) Get(ctx context.Context, id string) (Hook, error) {
	p, err := pathOf("/hooks", "id", id)
	if err != nil {
		return Hook{}, err
	}
	return get[Hook](ctx, s.c, call{method: "GET", path: p})
}

// Delete cancels a hook and deletes it with its attempts, whatever its
// status (DELETE /v1/hooks/{id}). A delivery already in flight may still
// arrive.
func (s *HookService) Delete(ctx context.Context, id string) error {
	p, err := pathOf("/hooks", "id", id)
	if err != nil {
		return err
	}
	return s.c.do(ctx, call{method: "DELETE", path: p}, nil)
}

// GetByKey returns the hook key names (GET /v1/hooks/by-key): the
// project's unfinished hook of that key, or when there is none the newest
// finished one.
func (s *HookService) GetByKey(ctx context.Context, key string) (Hook, error) {
	q, err := keyQuery(key)
	if err != nil {
		return Hook{}, err
	}
	return get[Hook](ctx, s.c, call{method: "GET", path: "/hooks/by-key", query: q})
}

// DeleteByKey cancels and deletes the hook GetByKey returns, as Delete
// does (DELETE /v1/hooks/by-key), which frees the key.
func (s *HookService) DeleteByKey(ctx context.Context, key string) error {
	q, err := keyQuery(key)
	if err != nil {
		return err
	}
	return s.c.do(ctx, call{method: "DELETE", path: "/hooks/by-key", query: q}, nil)
}

func keyQuery(key string) (url.Values, error) {
	if key == "" {
		return nil, fmt.Errorf("%w: key is empty", ErrMissingID)
	}
	return url.Values{"key": {key}}, nil
}

// Attempts lists a hook's recorded attempts, oldest first
// (GET /v1/hooks/{id}/attempts).
func (s *HookService) Attempts(ctx context.Context, id string) ([]HookAttempt, error) {
	p, err := pathOf("/hooks", "id", id)
	if err != nil {
		return nil, err
	}
	return get[[]HookAttempt](ctx, s.c, call{method: "GET", path: p + "/attempts"})
}

// BulkRetry moves the selected failed hooks back to pending with a fresh
// retry budget, and req.Edit's values if any (POST /v1/hooks/bulk/retry).
func (s *HookService) BulkRetry(ctx context.Context, req BulkActionRequest) (BulkResult, error) {
	return get[BulkResult](ctx, s.c, call{method: "POST", path: "/hooks/bulk/retry", body: req})
}

// BulkReplay creates a new hook, due now, for each selected completed hook,
// with req.Edit's values if any (POST /v1/hooks/bulk/replay). A replay past
// the quota's hard cap is refused whole; its dry run says so in
// QuotaRefused.
func (s *HookService) BulkReplay(ctx context.Context, req BulkActionRequest) (BulkResult, error) {
	return get[BulkResult](ctx, s.c, call{method: "POST", path: "/hooks/bulk/replay", body: req})
}

// BulkCancel cancels the selected pending and retry hooks
// (POST /v1/hooks/bulk/cancel).
func (s *HookService) BulkCancel(ctx context.Context, req BulkActionRequest) (BulkResult, error) {
	return get[BulkResult](ctx, s.c, call{method: "POST", path: "/hooks/bulk/cancel", body: req})
}

// RetryIDs queues a retry of each listed failed hook
// (POST /v1/hooks/retryIDs).
func (s *HookService) RetryIDs(ctx context.Context, req RetryIDsRequest) (BulkResult, error) {
	return get[BulkResult](ctx, s.c, call{method: "POST", path: "/hooks/retryIDs", body: req})
}

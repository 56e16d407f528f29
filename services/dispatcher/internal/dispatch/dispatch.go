// Package dispatch turns one DueHook from JetStream into one delivery and
// one AttemptResult: it checks the lease, loads the project's credentials,
// delivers, and reports what happened to the scheduler.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
	"github.com/sundial-run/sundial/services/dispatcher/internal/report"
)

// Credentials finds a project's signing keys and Authorization value.
type Credentials interface {
	Get(ctx context.Context, projectID uuid.UUID) (credential.Set, error)
}

// Sender makes one delivery.
type Sender interface {
	Send(ctx context.Context, r delivery.Request) (delivery.Result, error)
}

// Reporter publishes a result in a batch with others and returns once that
// batch is stored (report.Batcher).
type Reporter interface {
	Report(ctx context.Context, r *eventv1.AttemptResult) error
}

// Config wires a Handler.
type Config struct {
	Credentials Credentials
	Sender      Sender
	// Result publishes a result as a message of its own, with retries:
	// every result when Results is nil (what schedulers older than
	// batching understand), else those too late for a batch. It also
	// hands back the hooks of a DueHooks batch that cannot be delivered
	// now (batch.go). Its Log defaults to Log, its Retry to
	// report.DefaultRetry.
	Result bus.Retrying
	// Results, when set, publishes the results in batches.
	Results Reporter
	Log     *slog.Logger
	Metrics *Metrics
	// Hosts bounds the deliveries in flight per destination host; nil
	// means no per-host bound.
	Hosts *hostlimit.Limiter
	// Concurrency bounds the deliveries in flight, single or from batches
	// (default 128).
	Concurrency int
	// DeliveryTimeout is the longest a delivery takes (the sender's
	// limit): a delivery is started only while its lease has that long
	// left, plus time to report the result (see leaseTooShort).
	DeliveryTimeout time.Duration
	// TracerProvider makes the delivery spans; nil means the global one.
	TracerProvider trace.TracerProvider
}

// DefaultConcurrency is Config.Concurrency's default.
const DefaultConcurrency = 128

// Handler handles DueHook and DueHooks messages; Handle is a bus.Handler.
// Close it once no Handle runs.
type Handler struct {
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer
	// deliveries runs every delivery, so that Concurrency bounds them
	// whether they came alone or in batches.
	deliveries *bus.Pool
}

// NewHandler returns a Handler.
func NewHandler(cfg Config) *Handler {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Result.Log == nil {
		cfg.Result.Log = cfg.Log
	}
	if cfg.Result.Retry.Tries <= 0 {
		cfg.Result.Retry = report.DefaultRetry
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	return &Handler{cfg: cfg, log: cfg.Log, tracer: cfg.TracerProvider.Tracer(TracerName),
		deliveries: bus.NewPool(cfg.Concurrency)}
}

// Close ends the goroutines that ran deliveries.
func (h *Handler) Close() {
	h.deliveries.Close()
}

// dueHook is a decoded and checked DueHook.
type dueHook struct {
	msg       *eventv1.DueHook
	hookID    uuid.UUID
	projectID uuid.UUID
	// host is the destination's host[:port], parsed once for the log line
	// and the span ("" when the URL does not parse).
	host string
}

// Handle delivers one DueHook, or every hook of a DueHooks batch
// (batch.go). For one DueHook it returns nil once the hook needs nothing
// more from this message (delivered and reported, or left for the lease to
// re-drive), bus.Drop for a malformed message, and another error when the
// message should come back (a database failure, or shutdown cut the
// delivery short).
func (h *Handler) Handle(ctx context.Context, d bus.Delivery) error {
	if d.Header.Get(event.TypeHeader) == event.TypeDueHooks {
		return h.handleBatch(ctx, d)
	}
	due, err := decode(d.Data)
	if err != nil {
		return bus.Drop(err)
	}
	done := make(chan error, 1)
	h.deliveries.Go(func() { done <- h.deliverOne(ctx, due, d.NumDelivered) })
	return <-done
}

// deliverOne handles one decoded DueHook under its delivery span.
func (h *Handler) deliverOne(ctx context.Context, due dueHook, delivered uint64) error {
	ctx, span := h.startDeliver(ctx, due)
	res, err := h.handle(ctx, due, delivered)
	endDeliver(span, res.outcome, res.statusCode, err)
	return err
}

// handled is what the span of a handling records.
type handled struct {
	outcome    string
	statusCode int
}

// handle is Handle once the message is decoded; ctx carries its span, so
// the result is published with that span's trace context.
func (h *Handler) handle(ctx context.Context, due dueHook, delivered uint64) (handled, error) {
	log := deliveryLog{h: h, due: due}
	if h.leaseTooShort(due.msg) {
		// The scheduler re-drives the hook under a new lease; a result for
		// this one might come after that and be ignored as stale, the hook
		// delivered twice.
		log.info(ctx, "lease too close to its end to deliver; skipped", slog.Time("lease_expires_at", due.msg.GetLeaseExpiresAt().AsTime()))
		return handled{outcome: "lease_expired"}, nil
	}
	release, err := h.takeHostSlot(ctx, due, delivered)
	if err != nil {
		return handled{outcome: outcomeHostBusy}, err
	}
	defer release()
	creds, err := h.cfg.Credentials.Get(ctx, due.projectID)
	if errors.Is(err, postgres.ErrNotFound) {
		log.info(ctx, "project no longer exists; skipped")
		return handled{outcome: "project_gone"}, nil
	}
	if err != nil {
		return handled{outcome: "error"}, err
	}
	res, err := h.deliver(ctx, due, creds)
	// The host is done with; publishing the result must not hold its slot.
	release()
	if err != nil {
		return handled{outcome: "interrupted"}, err
	}
	log.delivery(ctx, res)
	h.publish(ctx, log, due, res)
	return handled{outcome: outcomeName(res.Outcome), statusCode: res.StatusCode}, nil
}

// errHostBusy is handed to bus.Retry when the destination host already has
// its limit of deliveries in flight.
var errHostBusy = errors.New("destination host at its concurrency limit")

// hostWait is how long a delivery waits for a slot on its busy host before
// handing its message back. A fast receiver at its limit frees a slot
// within a few milliseconds, so the wait serves it at the pace it answers;
// a slow one holds the process's slot no longer than this.
const hostWait = 100 * time.Millisecond

// takeHostSlot reserves a delivery slot on the hook's host, waiting up to
// hostWait, or returns a bus.Retry error that hands the message back after
// a short delay: waiting longer would hold one of the process's delivery
// slots for a host that is already slow. The lease check above runs again
// on every redelivery, so a message handed back until its lease expired is
// never delivered.
func (h *Handler) takeHostSlot(ctx context.Context, due dueHook, delivered uint64) (func(), error) {
	if h.cfg.Hosts == nil {
		return func() {}, nil
	}
	key := hostlimit.Key(due.msg.GetUrl())
	release, ok := h.cfg.Hosts.Acquire(ctx, key, hostWait)
	if !ok {
		return nil, bus.Retry(fmt.Errorf("%w (%s, %d in flight)", errHostBusy, key, h.cfg.Hosts.Limit()), hostlimit.Backoff(delivered))
	}
	return release, nil
}

func decode(data []byte) (dueHook, error) {
	var msg eventv1.DueHook
	if err := proto.Unmarshal(data, &msg); err != nil {
		return dueHook{}, fmt.Errorf("decode DueHook: %w", err)
	}
	return check(&msg)
}

// check validates a decoded DueHook.
func check(msg *eventv1.DueHook) (dueHook, error) {
	hookID, err := uuid.Parse(msg.GetHookId())
	if err != nil {
		return dueHook{}, fmt.Errorf("DueHook hook_id %q: %w", msg.GetHookId(), err)
	}
	projectID, err := uuid.Parse(msg.GetProjectId())
	if err != nil {
		return dueHook{}, fmt.Errorf("DueHook %s project_id %q: %w", hookID, msg.GetProjectId(), err)
	}
	if msg.GetLeaseExpiresAt() == nil {
		return dueHook{}, fmt.Errorf("DueHook %s has no lease_expires_at", hookID)
	}
	if len(msg.GetData()) == 0 {
		return dueHook{}, fmt.Errorf("DueHook %s has no data", hookID)
	}
	return dueHook{msg: msg, hookID: hookID, projectID: projectID, host: host(msg.GetUrl())}, nil
}

// resultMargin is the time a delivery's result needs, after the exchange,
// to be published and applied before the lease ends.
const resultMargin = 2 * time.Second

// leaseTooShort reports whether the hook's lease could end before a
// delivery started now is reported: then the scheduler would re-drive it
// while this delivery is still in flight, and the hook would arrive twice.
// The time needed is the delivery timeout plus resultMargin, but at most
// half the lease, so that a short lease (tests, a deployment that chose
// one) still lets the queue's first half deliver. A message of a scheduler
// that sends no lease duration is checked against expiry alone.
func (h *Handler) leaseTooShort(msg *eventv1.DueHook) bool {
	// An unknown lease (zero) makes the need zero: expiry alone.
	need := min(h.cfg.DeliveryTimeout+resultMargin, msg.GetLeaseDuration().AsDuration()/2)
	return time.Until(msg.GetLeaseExpiresAt().AsTime()) <= need
}

// deliver sends the hook, or fails the attempt without sending when the
// project has no key to sign with: the customer then sees why in the hook's
// failureError instead of receiving unsigned requests.
func (h *Handler) deliver(ctx context.Context, due dueHook, creds credential.Set) (delivery.Result, error) {
	if len(creds.Keys) == 0 {
		return delivery.Result{
			Outcome:   eventv1.Outcome_OUTCOME_FAILURE,
			Error:     "project has no active signing key",
			StartedAt: time.Now(),
		}, nil
	}
	m := due.msg
	req := delivery.Request{
		HookID:        due.hookID.String(),
		URL:           m.GetUrl(),
		Path:          m.GetPath(),
		Data:          m.GetData(),
		PostAt:        m.GetPostAt().AsTime(),
		CreatedAt:     m.GetCreatedAt().AsTime(),
		UpdatedAt:     m.GetUpdatedAt().AsTime(),
		Keys:          creds.Keys,
		Authorization: creds.Authorization,
		LeaseSeq:      m.GetLeaseSeq(),
		AsyncSecret:   creds.AsyncSecret,
	}
	done := h.cfg.Metrics.start(ctx)
	res, err := h.send(ctx, req, due.host)
	done(ctx, res, err)
	if err == nil && m.GetAttempt() == 1 {
		h.cfg.Metrics.recordLateness(ctx, res.StartedAt, req.PostAt)
	}
	return res, err
}

// deliveryLog writes the lines about one DueHook, each with the hook's
// ids. It builds them with slog.Attr values, not the key-value pairs of
// Logger.With: this runs once per delivery, and With formats its attributes
// in advance and boxes every value.
type deliveryLog struct {
	h   *Handler
	due dueHook
}

// idAttrs is how many attributes log adds to every line.
const idAttrs = 4

func (l deliveryLog) log(ctx context.Context, level slog.Level, msg string, extra ...slog.Attr) {
	if !l.h.log.Enabled(ctx, level) {
		return
	}
	var buf [idAttrs + 6]slog.Attr
	attrs := append(buf[:0],
		slog.String("hook_id", l.due.msg.GetHookId()),
		slog.String("project_id", l.due.msg.GetProjectId()),
		slog.Int64("attempt", int64(l.due.msg.GetAttempt())),
		slog.Int64("lease_seq", l.due.msg.GetLeaseSeq()))
	attrs = append(attrs, extra...)
	l.h.log.LogAttrs(ctx, level, msg, attrs...)
}

func (l deliveryLog) info(ctx context.Context, msg string, extra ...slog.Attr) {
	l.log(ctx, slog.LevelInfo, msg, extra...)
}

func (l deliveryLog) error(ctx context.Context, msg string, extra ...slog.Attr) {
	l.log(ctx, slog.LevelError, msg, extra...)
}

// delivery writes the one line per delivery. The URL is reduced to its
// host: a path or query string may carry the customer's secrets.
func (l deliveryLog) delivery(ctx context.Context, res delivery.Result) {
	extra := [5]slog.Attr{
		slog.String("host", l.due.host),
		slog.String("outcome", outcomeName(res.Outcome)),
		slog.Int("status_code", res.StatusCode),
		slog.Int64("duration_ms", res.Duration.Milliseconds()),
	}
	n := 4
	if res.Error != "" {
		extra[n] = slog.String("error", res.Error)
		n++
	}
	l.info(ctx, "delivery", extra[:n]...)
}

func host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

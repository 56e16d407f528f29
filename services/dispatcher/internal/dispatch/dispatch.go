// Package dispatch turns due hooks from JetStream into deliveries and
// AttemptResults: for each hook it checks the lease, loads the project's
// credentials, delivers, and reports what happened to the scheduler.
package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
	"github.com/sundial-run/sundial/services/dispatcher/internal/report"
)

// Credentials finds a project's signing keys and Authorization value.
type Credentials interface {
	Get(ctx context.Context, projectID uuid.UUID) (credential.Set, error)
}

// Sender makes one delivery, or prepares it (body, signed headers, async
// URLs) for the project's listener, and opens a connection to a receiver
// ahead of its deliveries; *delivery.Client is one.
type Sender interface {
	Send(ctx context.Context, r delivery.Request) (delivery.Result, error)
	Prepare(r delivery.Request, sentAt time.Time) delivery.Prepared
	Warm(ctx context.Context, url string, n int) error
	// Destination is the host a delivery to url goes to (its Host header)
	// and the host its deliveries count against (hostlimit.HostOf); both
	// "" for a URL no delivery is sent to.
	Destination(url string) (host, limitHost string)
}

// Leases tells which hooks, leased as seqs[i], still hold their lease
// (*lease.Store is one).
type Leases interface {
	Held(ctx context.Context, ids []uuid.UUID, seqs []int64) (map[uuid.UUID]bool, error)
}

// Listener hands one delivery to the project's listener through the
// gateway holding its socket and returns the gateway's answer
// (docs/listener.md, "Routing"); *listener.Requester is one.
type Listener interface {
	Deliver(ctx context.Context, d *eventv1.ListenerDelivery) (*eventv1.ListenerAnswer, error)
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
	// Leases checks the hooks of a message delivered again (message.go);
	// nil delivers them all.
	Leases Leases
	// Results publishes every delivery's result (required).
	Results Reporter
	// HandBack publishes, with retries, the hooks of a message that cannot
	// be delivered now (message.go). Its Log defaults to Log, its Retry to
	// report.DefaultRetry.
	HandBack bus.Retrying
	Log      *slog.Logger
	Metrics  *Metrics
	// Hosts bounds the deliveries in flight per project and destination
	// host, adapting to each receiver; nil means no per-host bound.
	Hosts *hostlimit.Limiter
	// Concurrency bounds the deliveries in flight, whatever message they
	// came in, each from its DueHook until its exchange is over (default
	// 128); as many results again may wait for their batch.
	Concurrency int
	// DeliveryTimeout is the longest a delivery takes (the sender's
	// limit): a delivery is started only while its lease has that long
	// left, plus time to report the result (see leaseTooShort).
	DeliveryTimeout time.Duration
	// Listener delivers the hooks whose DueHook says listener; nil defers
	// them (a dispatcher wired without one never sends them to the domain).
	Listener Listener
	// ListenerTimeout is the longest a listener delivery takes (the
	// Listener's limit), as DeliveryTimeout is for HTTPS; default
	// DefaultListenerTimeout.
	ListenerTimeout time.Duration
	// TracerProvider makes the delivery spans; nil means the global one.
	TracerProvider trace.TracerProvider
	// UnsampledRecordsNothing says that TracerProvider records no span
	// under an unsampled parent (telemetry.Providers): the delivery's
	// spans are then not started under one. Each cost a visible share of a
	// delivery's CPU for ids no one reads (docs/observability.md).
	UnsampledRecordsNothing bool
}

// DefaultConcurrency is Config.Concurrency's default.
const DefaultConcurrency = 128

// SlowRoom is how many slow deliveries a handler of concurrency holds
// besides its slots (slot.go), and so how many due messages may be in hand
// besides Concurrency once each of their hooks is delivering
// (bus.ConsumeOptions Released).
func SlowRoom(concurrency int) int { return slowFactor * concurrency }

// Handler handles due messages (message.go); Handle is a bus.Handler. Close
// it once no Handle runs.
type Handler struct {
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer
	// deliveries runs every delivery, and slots (Concurrency, and the slow
	// room) bound them across messages (slot.go). A delivery frees its
	// slot before its result waits for its batch, so the pool has room
	// for the deliveries on the wire and Concurrency results waiting (with
	// every slot busy, about a linger's worth of results at the highest
	// rates); beyond that the pool holds the next delivery back until a
	// batch is stored.
	deliveries *bus.Pool
	slots      *slots
	// waits are the Retry-After waits receivers asked for (hostwait.go).
	waits hostWaits
	// warming runs the connections warmHosts opens (message.go), under
	// warmCtx, which Close cancels before it waits for them: a message's
	// own context may outlive its Handle.
	warming  sync.WaitGroup
	warmCtx  context.Context
	stopWarm context.CancelFunc
}

// NewHandler returns a Handler.
func NewHandler(cfg Config) *Handler {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.HandBack.Log == nil {
		cfg.HandBack.Log = cfg.Log
	}
	if cfg.HandBack.Retry.Tries <= 0 {
		cfg.HandBack.Retry = report.DefaultRetry
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.ListenerTimeout <= 0 {
		cfg.ListenerTimeout = DefaultListenerTimeout
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	warmCtx, stopWarm := context.WithCancel(context.Background())
	return &Handler{cfg: cfg, log: cfg.Log, tracer: cfg.TracerProvider.Tracer(TracerName),
		deliveries: bus.NewPool((2 + slowFactor) * cfg.Concurrency), slots: newSlots(cfg.Concurrency, cfg.Metrics.slotsOpened),
		warmCtx: warmCtx, stopWarm: stopWarm}
}

// Close ends the goroutines that ran deliveries, and stops and waits for
// the connections being warmed, so that none is opened after the client
// closes.
func (h *Handler) Close() {
	h.stopWarm()
	h.warming.Wait()
	h.deliveries.Close()
}

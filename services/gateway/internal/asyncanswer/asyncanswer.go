// Package asyncanswer applies a receiver's answer to an async delivery: a
// POST to the ack or nack URL that came with the delivery it answered 202
// (package asyncurl makes the URLs; docs/product.md, "Async answers").
//
// An ack completes the hook and keeps the body sent with it on the attempt.
// A nack ends the attempt's wait at once; a scheduler then applies it as a
// failed attempt (retried, or failed when the retry budget is spent). The
// answer may come before the scheduler has applied the 202 (a receiver may
// call the URL before it answers the delivery): it then puts the hook in the
// waiting state itself, and the delivery's result, arriving later, is stale.
//
// An ack is the endpoint's successful delivery: like the scheduler applying
// a success, its transaction ends the endpoint's failing spell and writes the
// endpoint.recovered alert (recovery.go, docs/notifications.md).
package asyncanswer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// MaxBodyBytes bounds the body of an answer.
const MaxBodyBytes = 64 << 10

// Kind is what the receiver answers.
type Kind int

// Kinds of answer.
const (
	Ack Kind = iota + 1
	Nack
)

func (k Kind) String() string {
	if k == Ack {
		return "ack"
	}
	return "nack"
}

// Statuses an answer reports besides the hook's status.
const (
	StatusCompleted = "completed"
	StatusNacked    = "nacked"
)

// Errors of Apply. A wrong token is ErrNotFound, exactly like a hook that
// does not exist, so that an answer tells nothing about hooks it cannot
// answer for.
var (
	ErrNotFound = errors.New("no such hook, or not its URL")
	// ErrStale: the URL belongs to an older delivery of the hook than its
	// current one.
	ErrStale = errors.New("this URL belongs to an earlier delivery of the hook; only the latest delivery's URLs are answered")
	// ErrNotAsync: the delivery was not answered 202, so its result already
	// counted as it was.
	ErrNotAsync = errors.New("this delivery was not answered 202: its result already counted")
	// ErrExpired: the attempt's async timeout passed first; it is, or is
	// about to be, a failed attempt.
	ErrExpired = errors.New("the async timeout of this delivery has passed: the attempt counts as failed")
	// ErrInvalidBody wraps a body that cannot be stored (a NUL character,
	// half a surrogate pair, a number beyond PostgreSQL's range).
	ErrInvalidBody = errors.New("body cannot be stored")
)

// Answer is one POST to an ack or nack URL.
type Answer struct {
	Kind   Kind
	HookID uuid.UUID
	Lease  int64
	Token  string
	// Body is the JSON the receiver sent; nil when it sent none.
	Body json.RawMessage
}

// Service applies answers.
type Service struct {
	pool *pgxpool.Pool
	// pub publishes the alerts of committed acks; nil publishes none (the
	// notifier's sweeper still takes them in from the alerts table).
	pub *bus.Publisher
	log *slog.Logger
}

// Option configures a Service.
type Option func(*Service)

// WithAlerts publishes, after its commit, the endpoint.recovered alert an
// ack writes, logging to log when it cannot.
func WithAlerts(pub *bus.Publisher, log *slog.Logger) Option {
	return func(s *Service) { s.pub, s.log = pub, log }
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool, opts ...Option) *Service {
	s := &Service{pool: pool}
	for _, o := range opts {
		o(s)
	}
	return s
}

// txn is an answer's transaction and what it leaves to do after its commit.
type txn struct {
	*store.Queries
	// recovered is the endpoint.recovered alert the transaction wrote.
	recovered *eventv1.Alert
}

// Apply applies the answer in one transaction and returns the status to
// report: completed (an ack), nacked (a nack), or, for a repeat of an
// answer already given for this delivery, the hook's current status (the
// first answer wins).
func (s *Service) Apply(ctx context.Context, a Answer) (string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := &txn{Queries: store.New(tx)}
	status, err := apply(ctx, q, a)
	if err != nil {
		return "", err
	}
	if err := tx.Commit(ctx); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if q.recovered != nil {
		s.publish(ctx, q.recovered)
	}
	return status, nil
}

func apply(ctx context.Context, q *txn, a Answer) (string, error) {
	// The token first, before any lock: without it the URL says nothing
	// about the hook.
	secret, err := q.AsyncSecretOfHook(ctx, a.HookID)
	if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
		return "", ErrNotFound
	} else if err != nil {
		return "", fmt.Errorf("read secret: %w", err)
	}
	if !asyncurl.Valid(secret, a.HookID, a.Lease, a.Token) {
		return "", ErrNotFound
	}
	hook, err := q.LockHookForAnswer(ctx, a.HookID)
	if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
		return "", ErrNotFound // deleted meanwhile
	} else if err != nil {
		return "", fmt.Errorf("lock hook: %w", err)
	}
	if a.Lease > hook.LeaseSeq {
		return "", ErrNotFound // a token Sundial never sent
	}
	attempt, err := q.AttemptOfLease(ctx, store.AttemptOfLeaseParams{HookID: a.HookID, LeaseSeq: a.Lease})
	if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
		return beforeResult(ctx, q, a, hook)
	} else if err != nil {
		return "", fmt.Errorf("read attempt: %w", err)
	}
	state := ""
	if attempt.AsyncState != nil {
		state = *attempt.AsyncState
	}
	switch {
	case state == "acked" || state == "nacked":
		return hook.Status, nil
	case state == "expired" || (state == "waiting" && attempt.WaitEnded):
		return "", ErrExpired
	case state == "waiting":
		return answer(ctx, q, a, attempt.Attempt)
	case a.Lease < hook.LeaseSeq:
		return "", ErrStale
	default:
		return "", ErrNotAsync
	}
}

// beforeResult handles an answer for a delivery that has no attempt
// recorded yet: if it is the hook's delivery in flight, the answer came
// before the scheduler applied its 202, and starts the wait itself.
func beforeResult(ctx context.Context, q *txn, a Answer, hook store.LockHookForAnswerRow) (string, error) {
	if a.Lease < hook.LeaseSeq {
		return "", ErrStale
	}
	if hook.Status != "pending" || hook.LeaseExpiresAt == nil {
		// Not in flight (a bulk retry reset it, say): no delivery of this
		// lease awaits an answer.
		return "", ErrStale
	}
	attempt, err := q.StartWaitBeforeResult(ctx, store.StartWaitBeforeResultParams{
		HookID: a.HookID, TimeoutSeconds: hook.AsyncTimeoutSecs,
	})
	if err != nil {
		return "", fmt.Errorf("start wait: %w", err)
	}
	return answer(ctx, q, a, attempt)
}

// answer applies an ack or nack to the waiting attempt.
func answer(ctx context.Context, q *txn, a Answer, attempt int32) (string, error) {
	if a.Kind == Ack {
		if err := q.AckAttempt(ctx, store.AckAttemptParams{HookID: a.HookID, Attempt: attempt, Body: a.Body}); err != nil {
			return "", bodyError(fmt.Errorf("ack attempt: %w", err))
		}
		if _, err := q.CompleteAckedHook(ctx, a.HookID); err != nil {
			return "", fmt.Errorf("complete hook: %w", err)
		}
		alert, err := recoverEndpoint(ctx, q.Queries, a.HookID)
		if err != nil {
			return "", err
		}
		q.recovered = alert
		return StatusCompleted, nil
	}
	if err := q.NackAttempt(ctx, store.NackAttemptParams{HookID: a.HookID, Attempt: attempt, Body: a.Body}); err != nil {
		return "", bodyError(fmt.Errorf("nack attempt: %w", err))
	}
	if err := q.EndWaitNow(ctx, a.HookID); err != nil {
		return "", fmt.Errorf("end wait: %w", err)
	}
	return StatusNacked, nil
}

// bodyError marks PostgreSQL's refusal of the body's data (class 22: a NUL
// character, invalid text, a number out of range) as the receiver's
// mistake rather than a fault of the service.
func bodyError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		return fmt.Errorf("%w: %s", ErrInvalidBody, pgErr.Message)
	}
	return err
}

// Package asyncanswer applies a receiver's answer to an async delivery: a
// POST to the ack or nack URL that came with the delivery it answered 202
// (package asyncurl makes the URLs; docs/product.md, "Async answers").
//
// The gateway only records the answer: on the attempt it answers (acked or
// nacked, with the body sent with it), marked as waiting for a scheduler
// (answer_pending, whose trigger sends NOTIFY sundial_async in the same
// transaction). The scheduler, the one writer of hook state, then applies
// it within milliseconds: an ack completes the hook (and ends its
// endpoint's failing spell, with the endpoint.recovered alert), a nack is a
// failed attempt (retried, or failed when the retry budget is spent)
// (services/scheduler/internal/result/async.go; docs/architecture.md,
// "Async answers").
//
// The answer may come before the scheduler has applied the 202 (a receiver
// may call the URL before it answers the delivery): the attempt in flight
// is then recorded here, answered, and the scheduler settles it all the
// same; the delivery's result, arriving later, finds it settled.
package asyncanswer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
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

// Statuses a first answer reports (docs/product.md, "Async answers"). An
// ack reports completed: once recorded, it decides the attempt, and a
// scheduler writes the hook's completed status within moments (the ack's
// transaction wakes it); a nack reports nacked, and a scheduler retries or
// fails the hook.
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

// Service records answers.
type Service struct {
	pool *pgxpool.Pool
	// keys open the projects' async secrets.
	keys *secretbox.Keyring
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool, keys *secretbox.Keyring) *Service {
	return &Service{pool: pool, keys: keys}
}

// Apply records the answer in one transaction and returns the status to
// report: acked (an ack), nacked (a nack), or, for a repeat of an answer
// already given for this delivery, the hook's current status (the first
// answer wins; pending until a scheduler has applied it).
func (s *Service) Apply(ctx context.Context, a Answer) (string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	status, err := apply(ctx, store.New(tx), s.keys, a)
	if err != nil {
		return "", err
	}
	if err := tx.Commit(ctx); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	return status, nil
}

func apply(ctx context.Context, q *store.Queries, keys *secretbox.Keyring, a Answer) (string, error) {
	// The token first, before any lock: without it the URL says nothing
	// about the hook.
	row, err := q.AsyncSecretOfHook(ctx, a.HookID)
	if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
		return "", ErrNotFound
	} else if err != nil {
		return "", fmt.Errorf("read secret: %w", err)
	}
	secret, err := keys.Open(secretbox.Label(secretbox.ProjectAsyncSecret, row.ProjectID), row.AsyncSecretSealed)
	if err != nil {
		return "", fmt.Errorf("async secret of project %s: %w", row.ProjectID, err)
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
	case state == "acked" && a.Lease == hook.LeaseSeq && hook.Status == "pending":
		// A repeat before a scheduler applied the first ack: the ack
		// decides the hook, which is completed within moments.
		return StatusCompleted, nil
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
// before the scheduler applied its 202, and records the attempt with the
// answer (the scheduler settles it).
func beforeResult(ctx context.Context, q *store.Queries, a Answer, hook store.LockHookForAnswerRow) (string, error) {
	if a.Lease < hook.LeaseSeq {
		return "", ErrStale
	}
	if hook.Status != "pending" || hook.LeaseExpiresAt == nil {
		// Not in flight (a bulk retry reset it, say): no delivery of this
		// lease awaits an answer.
		return "", ErrStale
	}
	_, err := q.RecordAnswerBeforeResult(ctx, store.RecordAnswerBeforeResultParams{
		HookID: a.HookID, LeaseSeq: a.Lease, State: answeredState(a.Kind),
		TimeoutSeconds: hook.AsyncTimeoutSecs, Body: a.Body,
	})
	if err != nil {
		return "", bodyError(fmt.Errorf("record answer: %w", err))
	}
	return answerStatus(a.Kind), nil
}

// answer records an ack or nack on the waiting attempt.
func answer(ctx context.Context, q *store.Queries, a Answer, attempt int32) (string, error) {
	var err error
	if a.Kind == Ack {
		err = q.AckAttempt(ctx, store.AckAttemptParams{HookID: a.HookID, Attempt: attempt, Body: a.Body})
	} else {
		err = q.NackAttempt(ctx, store.NackAttemptParams{HookID: a.HookID, Attempt: attempt, Body: a.Body})
	}
	if err != nil {
		return "", bodyError(fmt.Errorf("%s attempt: %w", a.Kind, err))
	}
	return answerStatus(a.Kind), nil
}

// answeredState is the attempt's async state after the answer.
func answeredState(k Kind) string {
	if k == Ack {
		return "acked"
	}
	return "nacked"
}

// answerStatus is what a first answer reports.
func answerStatus(k Kind) string {
	if k == Ack {
		return StatusCompleted
	}
	return StatusNacked
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

// Package bus publishes and consumes Sundial's events on NATS JetStream.
//
// Publishing sets the Nats-Msg-Id and carries the trace context in the
// message headers. Consuming runs a handler per message and maps its outcome
// to JetStream in exactly one place (settle): nil acknowledges, Retry naks
// with a delay, Drop terminates, and any other error naks with a backoff.
package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

// Message is one event to publish.
type Message struct {
	Subject string
	// MsgID must come from event.MsgID (alerts), event.DuesMsgID or
	// event.ResultsMsgID.
	MsgID string
	Body  proto.Message
	// Type, when set, goes in the event.TypeHeader header: the due and
	// results subjects' consumers refuse a message without their one type
	// (DueHooks, AttemptResults: event.DecodeDue, event.DecodeResults).
	Type string
	// Items is how many items a batch message carries, for PublishAll's
	// tally; 0 counts as 1.
	Items int
}

// Publisher publishes events.
type Publisher struct {
	js jetstream.JetStream
	// opts are the publishes' options (WaitForLeader).
	opts []jetstream.PublishOpt
}

// NewPublisher returns a Publisher on js. A publish that finds no stream
// to take it fails after nats.go's retries (2, 250 ms apart).
func NewPublisher(js jetstream.JetStream) *Publisher {
	return &Publisher{js: js}
}

// leaderRetryWait is the wait between a WaitForLeader publisher's tries.
const leaderRetryWait = 250 * time.Millisecond

// WaitForLeader returns a Publisher on p's JetStream whose publishes, when
// no stream answers them, are tried again every 250 ms for up to wait (and
// within their context). A JetStream cluster whose stream is electing a
// leader, its old one dead, answers no publish for seconds
// (docs/operations.md, "A NATS node dies"); a publisher for which a failed
// publish is costly waits the election out. A stream that is truly gone
// makes such a publish fail only after wait.
func (p *Publisher) WaitForLeader(wait time.Duration) *Publisher {
	return &Publisher{js: p.js, opts: []jetstream.PublishOpt{
		jetstream.WithRetryWait(leaderRetryWait),
		jetstream.WithRetryAttempts(int(wait / leaderRetryWait)),
	}}
}

func (p *Publisher) encode(ctx context.Context, m Message) (*nats.Msg, error) {
	data, err := proto.Marshal(m.Body)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.Subject, err)
	}
	msg := nats.NewMsg(m.Subject)
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, m.MsgID)
	if m.Type != "" {
		msg.Header.Set(event.TypeHeader, m.Type)
	}
	telemetry.InjectNATS(ctx, msg.Header)
	return msg, nil
}

// Publish stores one event and waits for JetStream's acknowledgement.
func (p *Publisher) Publish(ctx context.Context, m Message) error {
	msg, err := p.encode(ctx, m)
	if err != nil {
		return err
	}
	if _, err := p.js.PublishMsg(ctx, msg, p.opts...); err != nil {
		return fmt.Errorf("publish %s %s: %w", m.Subject, m.MsgID, err)
	}
	return nil
}

// PublishAll publishes events without waiting between them, then waits for
// every acknowledgement. It returns how many items were stored (each
// message counts its Items, or 1) and the first error.
func (p *Publisher) PublishAll(ctx context.Context, msgs []Message) (int, error) {
	type pending struct {
		future jetstream.PubAckFuture
		items  int
	}
	futures := make([]pending, 0, len(msgs))
	var firstErr error
	for _, m := range msgs {
		msg, err := p.encode(ctx, m)
		if err == nil {
			var f jetstream.PubAckFuture
			f, err = p.js.PublishMsgAsync(msg, p.opts...)
			if err == nil {
				futures = append(futures, pending{future: f, items: max(m.Items, 1)})
				continue
			}
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("publish %s %s: %w", m.Subject, m.MsgID, err)
		}
	}
	stored := 0
	for _, f := range futures {
		select {
		case <-f.future.Ok():
			stored += f.items
		case err := <-f.future.Err():
			if firstErr == nil {
				firstErr = fmt.Errorf("publish %s: %w", f.future.Msg().Subject, err)
			}
		case <-ctx.Done():
			if firstErr == nil {
				firstErr = ctx.Err()
			}
			return stored, firstErr
		}
	}
	return stored, firstErr
}

// retryError asks for the message again after a delay.
type retryError struct {
	err   error
	after time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// Retry makes a handler's error redeliver the message after the delay.
func Retry(err error, after time.Duration) error {
	return &retryError{err: err, after: after}
}

// dropError gives the message up: it is never redelivered.
type dropError struct{ err error }

func (e *dropError) Error() string { return e.err.Error() }
func (e *dropError) Unwrap() error { return e.err }

// Drop makes a handler's error terminate the message: it is malformed or can
// never succeed, and redelivering it would only repeat the failure.
func Drop(err error) error {
	return &dropError{err: err}
}

// IsDrop reports whether err, from a handler, gives its message up (Drop).
func IsDrop(err error) bool {
	var drop *dropError
	return errors.As(err, &drop)
}

// Outcome is what settle did with a message; it is logged and counted.
type Outcome string

// Outcomes.
const (
	OutcomeAck   Outcome = "ack"
	OutcomeRetry Outcome = "retry"
	OutcomeDrop  Outcome = "drop"
)

// backoff is the redelivery delay for an unexpected error, growing with the
// number of deliveries so far and capped at a minute.
func backoff(delivered uint64) time.Duration {
	d := 250 * time.Millisecond
	for i := uint64(1); i < delivered && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// settle is the one place that maps a handler's error to JetStream.
func settle(msg jetstream.Msg, delivered uint64, err error) (Outcome, error) {
	var retry *retryError
	var drop *dropError
	switch {
	case err == nil:
		return OutcomeAck, msg.Ack()
	case errors.As(err, &drop):
		return OutcomeDrop, msg.Term()
	case errors.As(err, &retry):
		return OutcomeRetry, msg.NakWithDelay(retry.after)
	case errors.Is(err, context.Canceled):
		// Shutting down: hand the message back at once.
		return OutcomeRetry, msg.Nak()
	default:
		return OutcomeRetry, msg.NakWithDelay(backoff(delivered))
	}
}

package channel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Limits of GET /v1/channels/{id}/sends.
const (
	DefaultSendsLimit = 50
	MaxSendsLimit     = 200
)

// Outcomes of a try, and of a send test still waiting for its first try.
const (
	OutcomeSent    = "sent"
	OutcomeFailed  = "failed"
	OutcomePending = "pending"
)

// Send test timing.
const (
	// DefaultTestWait is how long a send test waits for the first try.
	DefaultTestWait = 10 * time.Second
	// testPoll is how often it looks.
	testPoll = 100 * time.Millisecond
	// publishTimeout bounds the publish of the test's Alert event.
	publishTimeout = 3 * time.Second
)

// TestKind is the alert kind of a send test.
const TestKind = "channel.test"

// Publisher publishes an event on NATS (bus.Publisher).
type Publisher interface {
	Publish(ctx context.Context, m bus.Message) error
}

// Send is one try of a send to a channel.
type Send struct {
	GroupID         uuid.UUID
	Kind            string
	Attempt         int
	StartedAt       time.Time
	DurationSeconds float64
	Outcome         string
	Error           *string
}

// Sends returns the channel's latest tries, newest first; an unknown
// channel is postgres.ErrNotFound.
func (s *Service) Sends(ctx context.Context, projectID, id uuid.UUID, limit int) ([]Send, error) {
	q := store.New(s.pool)
	if _, err := q.GetChannel(ctx, store.GetChannelParams{ProjectID: projectID, ID: id}); err != nil {
		return nil, fmt.Errorf("channel %s: %w", id, postgres.Translate(err))
	}
	rows, err := q.ListChannelSendAttempts(ctx, store.ListChannelSendAttemptsParams{ChannelID: &id, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list sends: %w", err)
	}
	out := make([]Send, len(rows))
	for i, r := range rows {
		out[i] = Send{
			GroupID: r.GroupID, Kind: r.Kind, Attempt: int(r.Attempt), StartedAt: r.StartedAt,
			DurationSeconds: r.DurationSeconds, Outcome: r.Outcome, Error: r.Error,
		}
	}
	return out, nil
}

// TestResult is the outcome of a send test: the first try's (sent or
// failed), or pending when none finished in time.
type TestResult struct {
	AlertID         string
	Outcome         string
	DurationSeconds float64
	Error           string
	// Published is false when the Alert event could not be published: the
	// notifier's sweeper then takes the alert in from the table.
	Published  bool
	PublishErr error
}

// Test queues a channel.test alert for the channel (postgres.ErrNotFound
// when the project has none such) and waits up to wait for the notifier's
// first try of it. The alert is stored before its event is published, so a
// lost event delays the test (the sweeper takes it in) but loses nothing.
func (s *Service) Test(ctx context.Context, projectID, id uuid.UUID, wait time.Duration) (TestResult, error) {
	alert, err := s.queueTest(ctx, projectID, id)
	if err != nil {
		return TestResult{}, err
	}
	res := TestResult{AlertID: alert.GetAlertId(), Outcome: OutcomePending, Published: true}
	if err := s.publish(ctx, alert); err != nil {
		res.Published, res.PublishErr = false, err
	}
	first, err := s.awaitFirstTry(ctx, res.AlertID, id, wait)
	switch {
	case errors.Is(err, errNoTryYet), err != nil && ctx.Err() != nil:
		// Pending: the wait ended, or the client stopped waiting (the
		// test goes on without it).
		return res, nil
	case err != nil:
		return TestResult{}, err
	}
	res.Outcome, res.DurationSeconds = first.Outcome, first.DurationSeconds
	if first.Error != nil {
		res.Error = *first.Error
	}
	return res, nil
}

// queueTest stores the test's alert in the transaction that finds the
// channel.
func (s *Service) queueTest(ctx context.Context, projectID, id uuid.UUID) (*eventv1.Alert, error) {
	alertID := TestKind + ":" + uuid.NewString()
	var alert *eventv1.Alert
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if _, err := q.GetChannel(ctx, store.GetChannelParams{ProjectID: projectID, ID: id}); err != nil {
			return fmt.Errorf("channel %s: %w", id, postgres.Translate(err))
		}
		now, err := q.DatabaseNow(ctx)
		if err != nil {
			return fmt.Errorf("database clock: %w", err)
		}
		alert = &eventv1.Alert{
			AlertId: alertID, Kind: eventv1.AlertKind_ALERT_KIND_CHANNEL_TEST,
			ProjectId: projectID.String(), ChannelId: id.String(), OccurredAt: timestamppb.New(now),
		}
		body, err := proto.Marshal(alert)
		if err != nil {
			return fmt.Errorf("encode alert: %w", err)
		}
		_, err = q.InsertAlert(ctx, store.InsertAlertParams{
			ID: alertID, ProjectID: projectID, Kind: TestKind, Body: body, OccurredAt: now,
		})
		if err != nil {
			return fmt.Errorf("store alert: %w", postgres.Translate(err))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("send test: %w", err)
	}
	return alert, nil
}

func (s *Service) publish(ctx context.Context, alert *eventv1.Alert) error {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	return s.pub.Publish(ctx, bus.Message{
		Subject: event.SubjectAlert, MsgID: event.MsgID(event.KindAlert, alert.GetAlertId(), 0), Body: alert,
	})
}

// errNoTryYet: the wait ended before the first try was recorded.
var errNoTryYet = errors.New("no try yet")

// awaitFirstTry looks for the first try every testPoll until wait passes
// or ctx ends.
func (s *Service) awaitFirstTry(ctx context.Context, alertID string, channelID uuid.UUID, wait time.Duration) (store.FirstAlertSendAttemptRow, error) {
	q := store.New(s.pool)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(testPoll)
	defer tick.Stop()
	for {
		row, err := q.FirstAlertSendAttempt(ctx, store.FirstAlertSendAttemptParams{AlertID: alertID, ChannelID: &channelID})
		switch {
		case err == nil:
			return row, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return row, fmt.Errorf("first try of %s: %w", alertID, err)
		}
		select {
		case <-ctx.Done():
			return row, ctx.Err()
		case <-deadline.C:
			return row, errNoTryYet
		case <-tick.C:
		}
	}
}

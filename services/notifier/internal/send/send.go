// Package send tries the sends of closed alert groups: it claims due sends
// under a lease, renders each group's message, hands it to a channel and
// records the try, the send's state and the channel's health
// (docs/notifications.md, "Sending: at least once, never silently
// dropped").
//
// A claim moves the send's next_try_at to the end of the lease and counts
// the attempt; its result is recorded only while the row still has that
// attempt count. A notifier killed mid-send thus leaves the send to be
// claimed again after the lease, and one whose lease ran out records
// nothing over its successor's claim.
package send

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/notifier/internal/channel"
	"github.com/sundial-run/sundial/services/notifier/internal/message"
	"github.com/sundial-run/sundial/services/notifier/internal/store"
)

// Channel sends one message to one target (package channel's *Sender).
type Channel interface {
	Send(ctx context.Context, t channel.Target, m message.Message) error
}

// maxErrorLength bounds an error kept in the database.
const maxErrorLength = 1000

// recordTimeout bounds the recording of a try, which runs even when the
// notifier is stopping.
const recordTimeout = 10 * time.Second

// Config configures a Worker.
type Config struct {
	Pool    *pgxpool.Pool
	Log     *slog.Logger
	Channel Channel
	// Concurrency bounds the sends in flight.
	Concurrency int
	// Lease is how long a claimed send is this worker's.
	Lease time.Duration
	// Timeout bounds one send.
	Timeout time.Duration
	// RetryMin is the wait after the first failed try, doubling up to RetryMax.
	RetryMin, RetryMax time.Duration
	// GiveUp is how long a send is retried before it fails for good.
	GiveUp time.Duration
	// DashboardURL is the base of the messages' links.
	DashboardURL string
	// Keys open the channels' configs and the signing keys, stored sealed
	// (package secretbox).
	Keys *secretbox.Keyring
	// ShutdownTimeout bounds how long sends in flight may finish once Run's
	// context is done; after it they are abandoned to lease expiry.
	ShutdownTimeout time.Duration
}

// Worker claims and tries sends.
type Worker struct {
	cfg Config
}

// New returns a Worker.
func New(cfg Config) *Worker { return &Worker{cfg: cfg} }

// claim is one claimed send.
type claim = store.ClaimSendsRow

// Run claims and tries sends every interval, and whenever wake fires, until
// ctx is done; then it lets the sends in flight finish within the shutdown
// timeout (recording them) and returns.
func (w *Worker) Run(ctx context.Context, interval time.Duration, wake <-chan struct{}) {
	// Sends outlive ctx by the shutdown timeout.
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	slots := make(chan struct{}, w.cfg.Concurrency)
	more := make(chan struct{}, 1)
	var running sync.WaitGroup
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for ctx.Err() == nil {
		free := w.cfg.Concurrency - len(slots)
		if free > 0 {
			claims, err := w.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				w.cfg.Log.WarnContext(ctx, "claim sends", "err", err)
			}
			for _, c := range claims {
				slots <- struct{}{}
				running.Add(1)
				go func() {
					defer running.Done()
					w.Try(sendCtx, c)
					<-slots
					// A slot is free: there may be more due sends.
					if len(claims) == free {
						poke(more)
					}
				}()
			}
		}
		select {
		case <-ctx.Done():
		case <-ticker.C:
		case <-wake:
		case <-more:
		}
	}
	w.drain(&running, cancelSends)
}

// drain waits for the sends in flight, at most the shutdown timeout, then
// cancels the rest: their leases hand them to another notifier.
func (w *Worker) drain(running *sync.WaitGroup, cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() {
		running.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(w.cfg.ShutdownTimeout):
		cancel()
		<-done
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// claim claims up to max due sends.
func (w *Worker) claim(ctx context.Context, max int) ([]claim, error) {
	rows, err := store.New(w.cfg.Pool).ClaimSends(ctx, store.ClaimSendsParams{
		LeaseSecs: w.cfg.Lease.Seconds(), MaxSends: int32(max),
	})
	if err != nil {
		return nil, fmt.Errorf("claim sends: %w", err)
	}
	return rows, nil
}

// Try makes one try of a claimed send and records it, with one log line.
func (w *Worker) Try(ctx context.Context, c claim) {
	log := w.cfg.Log.With("group_id", c.GroupID.String(), "target", c.Target, "attempt", c.Attempts)
	t, m, err := w.load(ctx, c)
	if errors.Is(err, pgx.ErrNoRows) {
		// The channel or the group was deleted, and the send with it.
		log.InfoContext(ctx, "alert send dropped: its channel or group no longer exists")
		return
	}
	if err != nil {
		log.WarnContext(ctx, "alert send not tried: loading it failed; retried after its lease", "err", err)
		return
	}
	log = log.With("alert_kind", m.Kind, "channel_kind", t.Kind)
	started := time.Now()
	sendCtx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	sendErr := w.cfg.Channel.Send(sendCtx, t, m)
	cancel()
	duration := time.Since(started)
	if ctx.Err() != nil {
		// Stopped by shutdown, not by the receiver: not the channel's fault.
		log.WarnContext(ctx, "alert send abandoned at shutdown; retried after its lease", "err", sendErr)
		return
	}
	recCtx, cancelRec := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancelRec()
	state, err := w.recordWithRetry(recCtx, c, started, duration, sendErr)
	switch {
	case err != nil:
		log.WarnContext(ctx, "alert send tried but not recorded; retried after its lease",
			"outcome", outcomeOf(sendErr), "send_err", errString(sendErr), "err", err)
	case state == "":
		log.WarnContext(ctx, "alert send tried after its lease ran out; another notifier has it",
			"outcome", outcomeOf(sendErr), "err", errString(sendErr))
	default:
		log.InfoContext(ctx, "alert send", "outcome", outcomeOf(sendErr), "state", state,
			"duration", duration.String(), "err", errString(sendErr))
	}
}

// load reads what the send needs: the group's message and the target.
func (w *Worker) load(ctx context.Context, c claim) (channel.Target, message.Message, error) {
	q := store.New(w.cfg.Pool)
	g, err := q.GetGroupForSend(ctx, c.GroupID)
	if err != nil {
		return channel.Target{}, message.Message{}, err
	}
	bodies, err := q.ListGroupAlerts(ctx, store.ListGroupAlertsParams{GroupID: &c.GroupID, MaxAlerts: message.MaxListed})
	if err != nil {
		return channel.Target{}, message.Message{}, err
	}
	m := message.Message{
		GroupID:      g.ID,
		Kind:         g.Kind,
		Project:      message.Project{ID: g.ProjectID, Name: g.ProjectName, Domain: g.ProjectDomain},
		Alerts:       decodeAll(bodies),
		Total:        max(int(g.AlertCount), len(bodies)),
		DashboardURL: w.cfg.DashboardURL,
		CreatedAt:    time.Now(),
	}
	if g.ClosedAt != nil {
		m.CreatedAt = *g.ClosedAt
	}
	t, err := w.target(ctx, q, c, g)
	return t, m, err
}

func (w *Worker) target(ctx context.Context, q *store.Queries, c claim, g store.GetGroupForSendRow) (channel.Target, error) {
	if c.ChannelID == nil {
		return channel.Target{Kind: channel.KindOwners, To: g.OwnerEmails}, nil
	}
	ch, err := q.GetChannelForSend(ctx, *c.ChannelID)
	if err != nil {
		return channel.Target{}, err
	}
	config, err := w.cfg.Keys.Open(secretbox.Label(secretbox.ChannelConfig, *c.ChannelID), ch.ConfigSealed)
	if err != nil {
		return channel.Target{}, fmt.Errorf("channel %s: %w", *c.ChannelID, err)
	}
	t := channel.Target{Kind: ch.Kind, Config: config}
	if ch.Kind == channelconfig.KindWebhook {
		keys, err := q.ListSigningKeys(ctx, g.ProjectID)
		if err != nil {
			return channel.Target{}, err
		}
		for _, k := range keys {
			secret, err := w.cfg.Keys.Open(secretbox.Label(secretbox.SigningKeySecret, k.ID), k.SecretSealed)
			if err != nil {
				return channel.Target{}, fmt.Errorf("project %s: %w", g.ProjectID, err)
			}
			t.SigningKeys = append(t.SigningKeys, string(secret))
		}
	}
	return t, nil
}

// decodeAll decodes stored alerts; one that does not decode is left out of
// the list (it is still counted in the total).
func decodeAll(bodies [][]byte) []*eventv1.Alert {
	out := make([]*eventv1.Alert, 0, len(bodies))
	for _, b := range bodies {
		var a eventv1.Alert
		if proto.Unmarshal(b, &a) == nil {
			out = append(out, &a)
		}
	}
	return out
}

// recordTries bounds the tries of recording a send's result: a transient
// database error (a deadlock with the scheduler on the hooks, a dropped
// connection) must not turn a message that went out into one sent again
// after the lease.
const recordTries = 3

// recordWithRetry is record, tried again on an error while ctx allows.
func (w *Worker) recordWithRetry(ctx context.Context, c claim, started time.Time, d time.Duration, sendErr error) (string, error) {
	var err error
	for try := range recordTries {
		var state string
		if state, err = w.record(ctx, c, started, d, sendErr); err == nil {
			return state, nil
		}
		select {
		case <-ctx.Done():
			return "", errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(try+1) * 100 * time.Millisecond):
		}
	}
	return "", err
}

// record writes the try, the send's state and the channel's health in one
// transaction, if the claim is still this one. It returns the send's new
// state ("sent", "pending" or "failed"), or "" when the claim was lost.
func (w *Worker) record(ctx context.Context, c claim, started time.Time, d time.Duration, sendErr error) (string, error) {
	var state string
	err := pgx.BeginFunc(ctx, w.cfg.Pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		var err error
		state, err = w.recordState(ctx, q, c, sendErr)
		if err != nil || state == "" {
			return err
		}
		if err := q.InsertSendAttempt(ctx, store.InsertSendAttemptParams{
			GroupID: c.GroupID, Target: c.Target, Attempt: c.Attempts, ChannelID: c.ChannelID,
			StartedAt: started, DurationSeconds: d.Seconds(), Outcome: outcomeOf(sendErr), Error: errPtr(sendErr),
		}); err != nil {
			return err
		}
		return w.recordHealth(ctx, q, c, sendErr)
	})
	if err != nil {
		return "", fmt.Errorf("record send %s/%s: %w", c.GroupID, c.Target, err)
	}
	return state, nil
}

// recordState moves the send on; "" when the claim is no longer this one.
func (w *Worker) recordState(ctx context.Context, q *store.Queries, c claim, sendErr error) (string, error) {
	if sendErr == nil {
		n, err := q.RecordSent(ctx, store.RecordSentParams{GroupID: c.GroupID, Target: c.Target, Attempts: c.Attempts})
		if err != nil || n == 0 {
			return "", err
		}
		_, err = q.MarkHooksNotified(ctx, &c.GroupID)
		return "sent", err
	}
	states, err := q.RecordFailure(ctx, store.RecordFailureParams{
		GiveUpSecs:  w.cfg.GiveUp.Seconds(),
		BackoffSecs: Backoff(int(c.Attempts), w.cfg.RetryMin, w.cfg.RetryMax).Seconds(),
		LastError:   errPtr(sendErr),
		GroupID:     c.GroupID, Target: c.Target, Attempts: c.Attempts,
	})
	if err != nil || len(states) == 0 {
		return "", err
	}
	return states[0], nil
}

// recordHealth keeps the channel's health; the owner addresses have none.
func (w *Worker) recordHealth(ctx context.Context, q *store.Queries, c claim, sendErr error) error {
	if c.ChannelID == nil {
		return nil
	}
	if sendErr == nil {
		return q.ChannelSucceeded(ctx, *c.ChannelID)
	}
	return q.ChannelFailed(ctx, store.ChannelFailedParams{LastError: errPtr(sendErr), ID: *c.ChannelID})
}

// Backoff is the wait after the attempt-th failed try: min, doubling, at
// most max.
func Backoff(attempt int, min, max time.Duration) time.Duration {
	d := min
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	return minDuration(d, max)
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

func outcomeOf(err error) string {
	if err == nil {
		return "sent"
	}
	return "failed"
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// errPtr is the error as stored: bounded, NULL for none. Channel errors
// hold no secret (package channel's contract).
func errPtr(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	if len(s) > maxErrorLength {
		// Cut on a rune boundary: the column is text.
		s = strings.ToValidUTF8(s[:maxErrorLength], "") + "…"
	}
	return &s
}

// compile-time check that package channel's Sender fits.
var _ Channel = (*channel.Sender)(nil)

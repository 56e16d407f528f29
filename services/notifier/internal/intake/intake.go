// Package intake takes alerts in: it puts each alert into its alert group,
// in one transaction, so that the event that brought it can be acknowledged
// (docs/notifications.md, "Never lost" and "Grouping").
//
// hook.failed alerts of a project share the project's open group, due after
// the project's group wait (and not before its follow-up time), which
// package closer closes; every other kind is a group of one, closed with
// its sends created at once. Taking the same alert in twice is a
// no-op, so the event and the sweeper (which re-drives alerts whose event
// never came) can both do it.
package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/notifier/internal/closer"
	"github.com/sundial-run/sundial/services/notifier/internal/message"
	"github.com/sundial-run/sundial/services/notifier/internal/store"
)

// ErrProjectGone says that an alert's project no longer exists: there is
// no one to tell, and the alert is dropped.
var ErrProjectGone = errors.New("project no longer exists")

// ErrUnknownKind says that an alert's kind is not one this notifier stores.
var ErrUnknownKind = errors.New("unknown alert kind")

// openGroupTries bounds the race in which the open failure group is closed
// between our insert and our lock: each try sees the new state.
const openGroupTries = 3

// Alert is one alert to take in.
type Alert struct {
	ID         string
	ProjectID  uuid.UUID
	Kind       string
	Body       []byte
	OccurredAt time.Time
	// Event is the decoded body, for the channel of a test and the log
	// line; nil when the stored body does not decode.
	Event *eventv1.Alert
}

// FromEvent makes an Alert of a decoded event and its wire bytes.
func FromEvent(a *eventv1.Alert, body []byte) (Alert, error) {
	kind, ok := Kind(a.GetKind())
	if !ok {
		return Alert{}, fmt.Errorf("alert %q: %w %s", a.GetAlertId(), ErrUnknownKind, a.GetKind())
	}
	project, err := uuid.Parse(a.GetProjectId())
	if err != nil {
		return Alert{}, fmt.Errorf("alert %q: project_id %q is not a UUID", a.GetAlertId(), a.GetProjectId())
	}
	if a.GetAlertId() == "" {
		return Alert{}, errors.New("alert_id is not set")
	}
	occurred := time.Now()
	if a.GetOccurredAt() != nil {
		occurred = a.GetOccurredAt().AsTime()
	}
	return Alert{ID: a.GetAlertId(), ProjectID: project, Kind: kind, Body: body, OccurredAt: occurred, Event: a}, nil
}

// Kind is the stored name of an alert kind.
func Kind(k eventv1.AlertKind) (string, bool) {
	switch k {
	case eventv1.AlertKind_ALERT_KIND_HOOK_FAILED:
		return message.KindHookFailed, true
	case eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED:
		return message.KindEndpointRecovered, true
	case eventv1.AlertKind_ALERT_KIND_ENDPOINT_PAUSED:
		return message.KindEndpointPaused, true
	case eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD:
		return message.KindQuotaThreshold, true
	case eventv1.AlertKind_ALERT_KIND_CHANNEL_TEST:
		return message.KindChannelTest, true
	}
	return "", false
}

// Intake stores alerts in their groups. It is safe for concurrent use.
type Intake struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	opts Options
}

// Options tune an Intake.
type Options struct {
	// Owners says whether quota alerts also go to the project's owner
	// addresses (only when the operator configured an SMTP server).
	Owners bool
	// GroupsDue is told (without blocking) that a failure group is due now,
	// so that the closer does not wait for its next tick; nil for none.
	GroupsDue func()
	// SendsDue is told that sends were created (a group of one); nil for none.
	SendsDue func()
}

// New returns an Intake.
func New(pool *pgxpool.Pool, log *slog.Logger, opts Options) *Intake {
	if opts.GroupsDue == nil {
		opts.GroupsDue = func() {}
	}
	if opts.SendsDue == nil {
		opts.SendsDue = func() {}
	}
	return &Intake{pool: pool, log: log, opts: opts}
}

// Result says what TakeIn did.
type Result struct {
	GroupID uuid.UUID
	// Already is true when the alert was in a group before.
	Already bool
	// Due is true when the alert joined a failure group that is due now.
	Due bool
	// Sends counts the sends created: a group of one goes out at once.
	Sends int
}

// TakeIn stores the alert (unless its producer did) and puts it into its
// group, in one transaction, and logs one line. It returns ErrProjectGone
// when the project no longer exists; any other error is worth a retry.
func (in *Intake) TakeIn(ctx context.Context, a Alert, via string) (Result, error) {
	var res Result
	err := pgx.BeginFunc(ctx, in.pool, func(tx pgx.Tx) error {
		var err error
		res, err = in.takeIn(ctx, store.New(tx), a)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrProjectGone) {
			in.log.InfoContext(ctx, "alert dropped: its project no longer exists", logAttrs(a, via)...)
			return Result{}, err
		}
		return Result{}, fmt.Errorf("take alert %s in: %w", a.ID, postgres.Translate(err))
	}
	if res.Due {
		in.opts.GroupsDue()
	}
	if res.Sends > 0 {
		in.opts.SendsDue()
	}
	attrs := append(logAttrs(a, via), "group_id", res.GroupID.String(), "already", res.Already, "due", res.Due, "sends", res.Sends)
	in.log.InfoContext(ctx, "alert taken in", attrs...)
	return res, nil
}

func (in *Intake) takeIn(ctx context.Context, q *store.Queries, a Alert) (Result, error) {
	err := q.InsertAlert(ctx, store.InsertAlertParams{
		ID: a.ID, Kind: a.Kind, Body: a.Body, OccurredAt: a.OccurredAt, ProjectID: a.ProjectID,
	})
	if isForeignKeyViolation(err) {
		return Result{}, ErrProjectGone
	}
	if err != nil {
		return Result{}, err
	}
	row, err := q.LockAlert(ctx, a.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Result{}, ErrProjectGone
	}
	if err != nil {
		return Result{}, err
	}
	if row.GroupID != nil {
		return Result{GroupID: *row.GroupID, Already: true}, nil
	}
	// The stored row, the producer's, is what counts.
	var res Result
	if row.Kind == message.KindHookFailed {
		res, err = joinFailureGroup(ctx, q, row.ProjectID)
	} else {
		res, err = in.singleGroup(ctx, q, row, a.Event)
	}
	if err != nil {
		return Result{}, err
	}
	return res, q.JoinGroup(ctx, store.JoinGroupParams{GroupID: &res.GroupID, ID: a.ID})
}

// joinFailureGroup adds one alert to the project's open failure group,
// opening it if there is none.
func joinFailureGroup(ctx context.Context, q *store.Queries, project uuid.UUID) (Result, error) {
	for range openGroupTries {
		err := q.OpenFailureGroup(ctx, store.OpenFailureGroupParams{ID: uuid.Must(uuid.NewV7()), ProjectID: project})
		if err != nil {
			return Result{}, err
		}
		g, err := q.LockOpenGroup(ctx, store.LockOpenGroupParams{ProjectID: project, Kind: message.KindHookFailed})
		if errors.Is(err, pgx.ErrNoRows) {
			// Closed between the two statements: open a new one.
			continue
		}
		if err != nil {
			return Result{}, err
		}
		return Result{GroupID: g.ID, Due: g.Due}, q.CountGroupAlert(ctx, g.ID)
	}
	return Result{}, errors.New("the open failure group kept closing under us")
}

// singleGroup makes the group of one alert, closed at once, and its sends.
func (in *Intake) singleGroup(ctx context.Context, q *store.Queries, row store.LockAlertRow, ev *eventv1.Alert) (Result, error) {
	if ev == nil {
		ev = decode(row.Body)
	}
	var channel *uuid.UUID
	if id, err := uuid.Parse(ev.GetChannelId()); err == nil && row.Kind == message.KindChannelTest {
		channel = &id
	}
	id := uuid.Must(uuid.NewV7())
	channel, err := q.InsertSingleGroup(ctx, store.InsertSingleGroupParams{ID: id, ProjectID: row.ProjectID, Kind: row.Kind, ChannelID: channel})
	if err != nil {
		return Result{}, err
	}
	sends, err := closer.CreateSends(ctx, q, closer.Group{ID: id, ProjectID: row.ProjectID, Kind: row.Kind, ChannelID: channel}, in.opts.Owners)
	return Result{GroupID: id, Sends: int(sends)}, err
}

// decode reads a stored body; nil when it does not decode (the alert is
// still grouped and sent, with what its row says).
func decode(body []byte) *eventv1.Alert {
	var a eventv1.Alert
	if proto.Unmarshal(body, &a) != nil {
		return nil
	}
	return &a
}

func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// logAttrs describe an alert in a log line (never a secret: alerts hold
// none).
func logAttrs(a Alert, via string) []any {
	attrs := []any{"alert_id", a.ID, "kind", a.Kind, "project_id", a.ProjectID.String(), "via", via}
	ev := a.Event
	switch {
	case ev == nil:
	case a.Kind == message.KindQuotaThreshold:
		attrs = append(attrs, "threshold_percent", int(ev.GetThresholdPercent()), "usage", ev.GetUsage(), "quota", ev.GetQuota())
	case a.Kind == message.KindChannelTest:
		attrs = append(attrs, "channel_id", ev.GetChannelId())
	default:
		attrs = append(attrs, "hook_id", ev.GetHookId(), "domain", ev.GetDomain(), "path", ev.GetPath())
	}
	return attrs
}

// Sweep takes in the alerts still waiting older after they were written,
// up to batches batches of size each, and returns how many it took in.
// An alert that cannot be taken in is logged and left for the next sweep.
func (in *Intake) Sweep(ctx context.Context, older time.Duration, size, batches int) (int, error) {
	taken := 0
	for range batches {
		rows, err := store.New(in.pool).ListWaitingAlerts(ctx, store.ListWaitingAlertsParams{
			OlderThanSecs: older.Seconds(), MaxAlerts: int32(size),
		})
		if err != nil {
			return taken, fmt.Errorf("list waiting alerts: %w", err)
		}
		for _, r := range rows {
			a := Alert{ID: r.ID, ProjectID: r.ProjectID, Kind: r.Kind, Body: r.Body, OccurredAt: r.OccurredAt, Event: decode(r.Body)}
			if _, err := in.TakeIn(ctx, a, "sweeper"); err != nil && !errors.Is(err, ErrProjectGone) {
				return taken, err
			}
			taken++
		}
		if len(rows) < size {
			break
		}
	}
	return taken, nil
}

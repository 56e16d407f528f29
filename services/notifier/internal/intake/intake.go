// Package intake takes alerts in: it puts each alert into its alert group,
// the alerts handed over together in one transaction, so that the events
// that brought them can be acknowledged (docs/notifications.md, "Never
// lost" and "Grouping").
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

// TakeIn takes one alert in: TakeInAll of one. It returns ErrProjectGone
// when the project no longer exists; any other error is worth a retry.
func (in *Intake) TakeIn(ctx context.Context, a Alert, via string) (Result, error) {
	res, errs := in.TakeInAll(ctx, []Alert{a}, via)
	return res[0], errs[0]
}

// TakeInAll stores the alerts (unless their producer did) and puts each
// into its group, in one transaction, and logs one line for each:
// res[i] and errs[i] say what became of alerts[i]. errs[i] is
// ErrProjectGone when the alert's project no longer exists; any other
// error is worth a retry. When the transaction fails, each alert is taken
// in alone, so that one alert's fault (its project deleted as it was
// taken in) does not hold the others back.
func (in *Intake) TakeInAll(ctx context.Context, alerts []Alert, via string) (res []Result, errs []error) {
	if len(alerts) == 0 {
		return nil, nil
	}
	res, errs = make([]Result, len(alerts)), make([]error, len(alerts))
	err := pgx.BeginFunc(ctx, in.pool, func(tx pgx.Tx) error {
		q, groups := store.New(tx), map[uuid.UUID]Result{}
		for i, a := range alerts {
			res[i], errs[i] = in.takeIn(ctx, q, a, groups)
			// A project found gone by its foreign key has failed the
			// transaction; one found gone by a missing row has not.
			if errs[i] != nil && (!errors.Is(errs[i], ErrProjectGone) || isForeignKeyViolation(errs[i])) {
				return errs[i]
			}
		}
		return nil
	})
	if err != nil && len(alerts) > 1 {
		for i, a := range alerts {
			res[i], errs[i] = in.TakeIn(ctx, a, via)
		}
		return res, errs
	}
	if err != nil {
		errs[0] = err
	}
	in.taken(ctx, alerts, via, res, errs)
	return res, errs
}

// taken wakes the closer and the sender for what a committed intake made
// due, translates its errors and logs one line for each alert.
func (in *Intake) taken(ctx context.Context, alerts []Alert, via string, res []Result, errs []error) {
	due, sends := false, false
	for i, a := range alerts {
		switch {
		case errors.Is(errs[i], ErrProjectGone):
			in.log.InfoContext(ctx, "alert dropped: its project no longer exists", logAttrs(a, via)...)
		case errs[i] != nil:
			errs[i] = fmt.Errorf("take alert %s in: %w", a.ID, postgres.Translate(errs[i]))
		default:
			due, sends = due || res[i].Due, sends || res[i].Sends > 0
			attrs := append(logAttrs(a, via), "group_id", res[i].GroupID.String(), "already", res[i].Already, "due", res[i].Due, "sends", res[i].Sends)
			in.log.InfoContext(ctx, "alert taken in", attrs...)
		}
	}
	if due {
		in.opts.GroupsDue()
	}
	if sends {
		in.opts.SendsDue()
	}
}

// takeIn takes one alert in within the caller's transaction. groups holds
// the failure groups this transaction has joined, by project: locked
// until it commits, each stays open for the project's next alert.
func (in *Intake) takeIn(ctx context.Context, q *store.Queries, a Alert, groups map[uuid.UUID]Result) (Result, error) {
	err := q.InsertAlert(ctx, store.InsertAlertParams{
		ID: a.ID, Kind: a.Kind, Body: a.Body, OccurredAt: a.OccurredAt, ProjectID: a.ProjectID,
	})
	if isForeignKeyViolation(err) {
		return Result{}, fmt.Errorf("%w: %w", ErrProjectGone, err)
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
	if row.Kind != message.KindHookFailed {
		res, err = in.singleGroup(ctx, q, row, a.Event)
	} else if joined, ok := groups[row.ProjectID]; ok {
		res, err = joined, q.CountGroupAlert(ctx, joined.GroupID)
	} else if res, err = joinFailureGroup(ctx, q, row.ProjectID); err == nil {
		groups[row.ProjectID] = res
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
		alerts := make([]Alert, len(rows))
		for i, r := range rows {
			alerts[i] = Alert{ID: r.ID, ProjectID: r.ProjectID, Kind: r.Kind, Body: r.Body, OccurredAt: r.OccurredAt, Event: decode(r.Body)}
		}
		_, errs := in.TakeInAll(ctx, alerts, "sweeper")
		for _, err := range errs {
			if err != nil && !errors.Is(err, ErrProjectGone) {
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

package breaker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Unit is what fails together: a project's domain, the destination server.
// Timeouts, connection errors, 429 and 503 are the server's, not a path's,
// and a per-path unit would never trip for paths that carry an id.
type Unit struct {
	ProjectID uuid.UUID
	Domain    string
}

func compareUnits(a, b Unit) int {
	if c := cmp.Compare(a.ProjectID.String(), b.ProjectID.String()); c != 0 {
		return c
	}
	return cmp.Compare(a.Domain, b.Domain)
}

// Record moves the breakers of the units by their outcomes (in the order
// they were applied), in the caller's transaction, which applies those
// results: the state can never say what the hooks do not. It returns the
// alerts the changes raise, for the caller to write in the same
// transaction. A batch with no failure and no unit in trouble costs one
// statement that finds nothing and locks nothing.
func (p Policy) Record(ctx context.Context, q *store.Queries, outcomes map[Unit][]Outcome) ([]*eventv1.Alert, error) {
	if len(outcomes) == 0 {
		return nil, nil
	}
	var failing, calm []Unit
	for u, os := range outcomes {
		if slices.ContainsFunc(os, func(o Outcome) bool { return o.Failing }) {
			failing = append(failing, u)
		} else {
			calm = append(calm, u)
		}
	}
	lock := failing
	if len(calm) > 0 {
		rows, err := q.TroubledBreakers(ctx, unitArgs[store.TroubledBreakersParams](calm))
		if err != nil {
			return nil, fmt.Errorf("read breakers: %w", err)
		}
		for _, r := range rows {
			lock = append(lock, Unit{r.ProjectID, r.Domain})
		}
	}
	if len(lock) == 0 {
		return nil, nil
	}
	if len(failing) > 0 {
		slices.SortFunc(failing, compareUnits)
		if err := q.EnsureBreakers(ctx, unitArgs[store.EnsureBreakersParams](failing)); err != nil {
			return nil, fmt.Errorf("create breakers: %w", err)
		}
	}
	rows, err := q.LockBreakers(ctx, unitArgs[store.LockBreakersParams](lock))
	if err != nil {
		return nil, fmt.Errorf("lock breakers: %w", err)
	}
	var alerts []*eventv1.Alert
	for _, row := range rows {
		u := Unit{row.ProjectID, row.Domain}
		s := stateOf(row)
		var events []Event
		for _, o := range outcomes[u] {
			var evs []Event
			s, evs = p.Apply(s, o, row.DbNow)
			events = append(events, evs...)
		}
		a, err := commit(ctx, q, u, s, events, row.DbNow)
		if err != nil {
			return nil, err
		}
		alerts = append(alerts, a...)
	}
	return alerts, nil
}

// ApplyResumes ends, in the caller's transaction, the pauses the API asked
// to end (up to maxRows of them), releasing their hooks, and returns how
// many requests it applied and the alerts to write.
func (p Policy) ApplyResumes(ctx context.Context, q *store.Queries, maxRows int) (int, []*eventv1.Alert, error) {
	rows, err := q.LockResumeRequests(ctx, int32(maxRows))
	if err != nil {
		return 0, nil, fmt.Errorf("lock resume requests: %w", err)
	}
	var alerts []*eventv1.Alert
	for _, r := range rows {
		row := store.LockBreakersRow(r)
		s, events := p.Resume(stateOf(row))
		a, err := commit(ctx, q, Unit{row.ProjectID, row.Domain}, s, events, row.DbNow)
		if err != nil {
			return 0, nil, err
		}
		alerts = append(alerts, a...)
	}
	return len(rows), alerts, nil
}

// commit stores a unit's new state, releases the hooks of a pause that
// ended and returns the alerts of its events.
func commit(ctx context.Context, q *store.Queries, u Unit, s State, events []Event, now time.Time) ([]*eventv1.Alert, error) {
	if err := q.WriteBreaker(ctx, writeArgs(u, s)); err != nil {
		return nil, fmt.Errorf("write breaker of %s %s: %w", u.ProjectID, u.Domain, err)
	}
	var alerts []*eventv1.Alert
	for _, e := range events {
		switch e.Kind {
		case Paused:
			alerts = append(alerts, pausedAlert(u, e.State, now))
		case Resumed:
			if !e.State.HeldUntil.IsZero() {
				if _, err := q.ReleaseHeldHooks(ctx, store.ReleaseHeldHooksParams{
					HeldUntil: e.State.HeldUntil, ProjectID: u.ProjectID, Domain: u.Domain,
				}); err != nil {
					return nil, fmt.Errorf("release hooks of %s %s: %w", u.ProjectID, u.Domain, err)
				}
			}
			if e.State.Alerted {
				alerts = append(alerts, resumedAlert(u, e.State, now))
			}
		}
	}
	return alerts, nil
}

// pausedAlert is the endpoint.paused alert of the pause s is in.
func pausedAlert(u Unit, s State, now time.Time) *eventv1.Alert {
	a := &eventv1.Alert{
		AlertId:     event.EndpointPausedAlertID(u.ProjectID, u.Domain, s.PausedAt),
		Kind:        eventv1.AlertKind_ALERT_KIND_ENDPOINT_PAUSED,
		ProjectId:   u.ProjectID.String(),
		OccurredAt:  timestamppb.New(now),
		Domain:      u.Domain,
		Error:       s.Reason,
		Attempts:    s.Failures,
		PausedUntil: timestamppb.New(s.PausedUntil),
	}
	if c, ok := failclass.Parse(s.PauseClass); ok {
		// A pause by the failure policy: until resumed, no probe.
		a.FailureClass = c
	}
	return a
}

// resumedAlert announces the end of an announced pause: an
// endpoint.recovered alert of the domain (no path), identified by the
// pause's start (docs/notifications.md).
func resumedAlert(u Unit, s State, now time.Time) *eventv1.Alert {
	a := &eventv1.Alert{
		AlertId:    event.EndpointRecoveredAlertID(u.ProjectID, u.Domain, "", s.PausedAt),
		Kind:       eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED,
		ProjectId:  u.ProjectID.String(),
		OccurredAt: timestamppb.New(now),
		Domain:     u.Domain,
	}
	if s.Probe != uuid.Nil {
		a.HookId = s.Probe.String()
	}
	return a
}

// unitArgs builds the parallel arrays of a statement over units.
func unitArgs[P ~struct {
	ProjectIds []uuid.UUID
	Domains    []string
}](units []Unit) P {
	var p struct {
		ProjectIds []uuid.UUID
		Domains    []string
	}
	for _, u := range units {
		p.ProjectIds = append(p.ProjectIds, u.ProjectID)
		p.Domains = append(p.Domains, u.Domain)
	}
	return P(p)
}

func stateOf(r store.LockBreakersRow) State {
	s := State{
		Failures: r.ConsecutiveFailures, FailingSince: deref(r.FailingSince), LastError: deref(r.LastError),
		PausedAt: deref(r.PausedAt), PausedUntil: deref(r.PausedUntil), Cause: deref(r.PauseCause),
		Reason: deref(r.PauseReason), Cooldown: time.Duration(r.CooldownSecs) * time.Second,
		HeldUntil: deref(r.HeldUntil), Alerted: r.Alerted, ResumeRequested: r.ResumeRequested,
		HealthyAt: deref(r.HealthyAt), HealthyPath: deref(r.HealthyPath), HealthyPathFailing: r.HealthyPathFailing,
	}
	if r.ProbeHookID != nil {
		s.Probe = *r.ProbeHookID
	}
	return s
}

func writeArgs(u Unit, s State) store.WriteBreakerParams {
	w := store.WriteBreakerParams{
		ProjectID: u.ProjectID, Domain: u.Domain,
		ConsecutiveFailures: s.Failures, FailingSince: timeOrNil(s.FailingSince), LastError: textOrNil(s.LastError),
		PausedAt: timeOrNil(s.PausedAt), PausedUntil: timeOrNil(s.PausedUntil), PauseCause: textOrNil(s.Cause),
		PauseReason: textOrNil(s.Reason), CooldownSecs: int32(s.Cooldown / time.Second), HeldUntil: timeOrNil(s.HeldUntil),
		Alerted: s.Alerted, ResumeRequested: s.ResumeRequested,
		HealthyAt: timeOrNil(s.HealthyAt), HealthyPath: textOrNil(s.HealthyPath), HealthyPathFailing: s.HealthyPathFailing,
	}
	if s.Probe != uuid.Nil {
		w.ProbeHookID = &s.Probe
	}
	return w
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func textOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

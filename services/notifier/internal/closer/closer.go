// Package closer closes the failure groups whose time has come: a closed
// group takes no more alerts and gets one send per target (each enabled
// channel of the project subscribed to the kind), which package send then
// tries. Closing a failure group also moves the project's follow-up backoff
// on (docs/notifications.md, "Grouping"). The groups of one (every other
// kind) are closed by the intake as they are made, with CreateSends: the
// schema allows one open group per project and kind, and these must not
// wait for each other.
package closer

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/services/notifier/internal/message"
	"github.com/sundial-run/sundial/services/notifier/internal/store"
)

// Closer closes due groups. Several notifiers may run one each: a group is
// closed by exactly one of them (FOR UPDATE SKIP LOCKED).
type Closer struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	// owners is whether quota alerts also go to the owner addresses: only
	// when the operator configured an SMTP server for them.
	owners bool
	// sendsDue is told (without blocking) that new sends are due.
	sendsDue func()
}

// New returns a Closer; sendsDue may be nil.
func New(pool *pgxpool.Pool, log *slog.Logger, owners bool, sendsDue func()) *Closer {
	if sendsDue == nil {
		sendsDue = func() {}
	}
	return &Closer{pool: pool, log: log, owners: owners, sendsDue: sendsDue}
}

// CloseDue closes up to max due groups in one transaction and returns how
// many it closed.
func (c *Closer) CloseDue(ctx context.Context, max int) (int, error) {
	var closed []closedGroup
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		groups, err := q.ClaimDueGroups(ctx, int32(max))
		if err != nil {
			return err
		}
		closed = closed[:0]
		for _, g := range groups {
			sends, err := c.close(ctx, q, g)
			if err != nil {
				return fmt.Errorf("group %s: %w", g.ID, err)
			}
			closed = append(closed, closedGroup{row: g, sends: sends})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("close due groups: %w", err)
	}
	total := int64(0)
	for _, g := range closed {
		total += g.sends
		c.log.InfoContext(ctx, "alert group closed", "group_id", g.row.ID.String(),
			"project_id", g.row.ProjectID.String(), "kind", g.row.Kind, "sends", g.sends)
	}
	if total > 0 {
		c.sendsDue()
	}
	return len(closed), nil
}

type closedGroup struct {
	row   store.ClaimDueGroupsRow
	sends int64
}

// close closes one group and creates its sends.
func (c *Closer) close(ctx context.Context, q *store.Queries, g store.ClaimDueGroupsRow) (int64, error) {
	if err := q.CloseGroup(ctx, g.ID); err != nil {
		return 0, err
	}
	sends, err := CreateSends(ctx, q, Group{ID: g.ID, ProjectID: g.ProjectID, Kind: g.Kind, ChannelID: g.ChannelID}, c.owners)
	if err != nil {
		return 0, err
	}
	if g.Kind == message.KindHookFailed {
		err := q.AdvanceFollowup(ctx, store.AdvanceFollowupParams{ProjectID: g.ProjectID, OpenedAt: g.OpenedAt})
		if err != nil {
			return 0, err
		}
	}
	return sends, nil
}

// Group is what CreateSends needs of a group.
type Group struct {
	ID, ProjectID uuid.UUID
	Kind          string
	// ChannelID is the tested channel of a channel.test group.
	ChannelID *uuid.UUID
}

// CreateSends creates the sends of a group that goes out, in the caller's
// transaction, and returns how many. owners says whether a quota alert
// also goes to the project's owner addresses. The intake uses it for the
// groups of one, which are closed as soon as they are made.
func CreateSends(ctx context.Context, q *store.Queries, g Group, owners bool) (int64, error) {
	sends, err := q.CreateChannelSends(ctx, store.CreateChannelSendsParams{
		GroupID: g.ID, ProjectID: g.ProjectID, Kind: g.Kind, ChannelID: g.ChannelID,
	})
	if err != nil {
		return 0, err
	}
	if g.Kind == message.KindQuotaThreshold && owners {
		n, err := q.CreateOwnersSend(ctx, store.CreateOwnersSendParams{GroupID: g.ID, ProjectID: g.ProjectID})
		if err != nil {
			return 0, err
		}
		sends += n
	}
	return sends, nil
}

package listen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// PresenceStore keeps this gateway's presence rows, checks the sockets'
// keys, and removes what expired (store.Queries).
type PresenceStore interface {
	OpenListenerPresence(ctx context.Context, arg store.OpenListenerPresenceParams) (store.OpenListenerPresenceRow, error)
	RefreshListenerPresence(ctx context.Context, arg store.RefreshListenerPresenceParams) (int64, error)
	CloseListenerPresence(ctx context.Context, arg store.CloseListenerPresenceParams) (int64, error)
	DeleteStaleListenerPresence(ctx context.Context, arg store.DeleteStaleListenerPresenceParams) (int64, error)
	DeleteExpiredListenerTickets(ctx context.Context, maxRows int32) (int64, error)
	UsableListenerKeys(ctx context.Context, keyIDs []uuid.UUID) ([]uuid.UUID, error)
}

// Bounds of the clean-up, per heartbeat.
const (
	// sweepBatch is the most expired tickets, and the most stale presence
	// rows, deleted per heartbeat.
	sweepBatch = 1000
	// staleAfter is how long after its resume window a presence row is
	// deleted.
	staleAfter = time.Hour
	// storeTimeout bounds each statement of the background work.
	storeTimeout = 5 * time.Second
)

// presenceState is what the presence writer last wrote: the projects
// whose row it marked connected. Only reconcile reads and writes it.
type presenceState struct {
	mu      sync.Mutex
	written map[uuid.UUID]bool
}

// Run keeps the presence rows in step with the sockets (at once when a
// project gains its first socket or loses its last, and every heartbeat),
// closes the sockets whose key was revoked, and deletes expired tickets
// and stale presence rows, until ctx ends.
func (h *Hub) Run(ctx context.Context) {
	heartbeat := time.NewTicker(h.cfg.Intervals.Heartbeat)
	defer heartbeat.Stop()
	recheck := time.NewTicker(h.cfg.Intervals.Recheck)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.changed:
			h.logErr(h.reconcile(ctx))
		case <-heartbeat.C:
			h.logErr(h.reconcile(ctx))
			h.logErr(h.refresh(ctx))
			h.logErr(h.sweep(ctx))
		case <-recheck.C:
			h.logErr(h.recheck(ctx))
		}
	}
}

func (h *Hub) logErr(err error) {
	if err != nil {
		h.log.Warn("listener background work failed", "error", err)
	}
}

// reconcile marks connected the projects that gained sockets since it last
// ran (and NOTIFYs the scheduler), and disconnected those that lost their
// last one. What fails is tried again at the next call.
func (h *Hub) reconcile(ctx context.Context) error {
	h.presence.mu.Lock()
	defer h.presence.mu.Unlock()
	counts := h.counts()
	var errs []error
	for id, n := range counts {
		if h.presence.written[id] {
			continue
		}
		if err := h.open(ctx, id, n); err != nil {
			errs = append(errs, err)
			continue
		}
		h.presence.written[id] = true
	}
	for id := range h.presence.written {
		if _, ok := counts[id]; ok {
			continue
		}
		if err := h.closePresence(ctx, id); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(h.presence.written, id)
	}
	return errors.Join(errs...)
}

func (h *Hub) open(ctx context.Context, projectID uuid.UUID, sockets int32) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	_, err := h.store.OpenListenerPresence(ctx, store.OpenListenerPresenceParams{
		GatewayID: h.gatewayID, Sockets: sockets, WindowSeconds: h.cfg.ResumeWindow.Seconds(), ProjectID: projectID,
	})
	if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
		// The project was deleted: recheck closes its sockets (its keys
		// went with it).
		return nil
	}
	if err != nil {
		return fmt.Errorf("open presence of project %s: %w", projectID, err)
	}
	return nil
}

func (h *Hub) closePresence(ctx context.Context, projectID uuid.UUID) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	_, err := h.store.CloseListenerPresence(ctx, store.CloseListenerPresenceParams{
		WindowSeconds: h.cfg.ResumeWindow.Seconds(), ProjectID: projectID, GatewayID: h.gatewayID,
	})
	if err != nil {
		return fmt.Errorf("close presence of project %s: %w", projectID, postgres.Translate(err))
	}
	return nil
}

// refresh moves seen_at and resume_until of every project this gateway
// holds sockets of, in one statement.
func (h *Hub) refresh(ctx context.Context) error {
	h.presence.mu.Lock()
	defer h.presence.mu.Unlock()
	counts := h.counts()
	ids := make([]uuid.UUID, 0, len(counts))
	sockets := make([]int32, 0, len(counts))
	for id, n := range counts {
		if h.presence.written[id] {
			ids = append(ids, id)
			sockets = append(sockets, n)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	_, err := h.store.RefreshListenerPresence(ctx, store.RefreshListenerPresenceParams{
		GatewayID: h.gatewayID, WindowSeconds: h.cfg.ResumeWindow.Seconds(), ProjectIds: ids, Sockets: sockets,
	})
	if err != nil {
		return fmt.Errorf("refresh presence: %w", postgres.Translate(err))
	}
	return nil
}

// sweep deletes a batch of expired tickets and of presence rows whose
// window ended long ago.
func (h *Hub) sweep(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	_, terr := h.store.DeleteExpiredListenerTickets(ctx, sweepBatch)
	_, perr := h.store.DeleteStaleListenerPresence(ctx, store.DeleteStaleListenerPresenceParams{
		GraceSeconds: staleAfter.Seconds(), MaxRows: sweepBatch,
	})
	if err := errors.Join(terr, perr); err != nil {
		return fmt.Errorf("sweep listener tickets and presence: %w", postgres.Translate(err))
	}
	return nil
}

// recheck closes, with 4003, the sockets whose key was revoked or whose
// project was deleted, in one look-up for all.
func (h *Hub) recheck(ctx context.Context) error {
	socks := h.all()
	if len(socks) == 0 {
		return nil
	}
	seen := make(map[uuid.UUID]bool)
	keys := make([]uuid.UUID, 0, len(socks))
	for _, s := range socks {
		if !seen[s.grant.KeyID] {
			seen[s.grant.KeyID] = true
			keys = append(keys, s.grant.KeyID)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	usable, err := h.store.UsableListenerKeys(ctx, keys)
	if err != nil {
		return fmt.Errorf("check listener keys: %w", postgres.Translate(err))
	}
	ok := make(map[uuid.UUID]bool, len(usable))
	for _, id := range usable {
		ok[id] = true
	}
	for _, s := range socks {
		if !ok[s.grant.KeyID] {
			s.end(StatusForbidden, "API key revoked or project deleted")
		}
	}
	return nil
}

// Package lease tells a dispatcher which hooks of a due message still hold
// the lease the message gave them. A message is delivered again when the
// dispatcher that had it died (or let its AckWait pass): that dispatcher may
// have delivered some of its hooks and reported them, and delivering those
// again would be a duplicate no fault of the receiver's caused.
package lease

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/dispatcher/internal/store"
)

// Store reads leases from PostgreSQL.
type Store struct {
	q *store.Queries
}

// NewStore returns a Store on db.
func NewStore(db store.DBTX) *Store {
	return &Store{q: store.New(db)}
}

// Held returns, of the hooks ids[i] leased as seqs[i], those whose lease
// still holds: no result of it applied, no newer lease.
func (s *Store) Held(ctx context.Context, ids []uuid.UUID, seqs []int64) (map[uuid.UUID]bool, error) {
	rows, err := s.q.HeldLeases(ctx, store.HeldLeasesParams{HookIds: ids, LeaseSeqs: seqs})
	if err != nil {
		return nil, fmt.Errorf("read the leases of %d hooks: %w", len(ids), err)
	}
	held := make(map[uuid.UUID]bool, len(rows))
	for _, id := range rows {
		held[id] = true
	}
	return held, nil
}

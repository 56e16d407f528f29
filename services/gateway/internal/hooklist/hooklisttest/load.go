// Package hooklisttest loads many hooks into PostgreSQL at once (COPY), for
// tests and benchmarks of listing on large projects. A million hooks take
// about ten seconds.
package hooklisttest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

// Hook is one hook to load, with what listing looks at.
type Hook struct {
	ID        uuid.UUID
	Status    string
	CreatedAt time.Time
	PostAt    time.Time
	// Data is the payload; nil gives a small document.
	Data json.RawMessage
	// Tags are the hook's tags; nil for none.
	Tags []string
	// OrderingKey is the hook's ordering key; nil for none.
	OrderingKey *string
}

// batchSize bounds the rows of one COPY, and so the memory a load holds.
const batchSize = 50_000

// Load inserts the hooks into an existing project. Pending and retry hooks
// get run_at = post_at, as the schema requires.
func Load(ctx context.Context, db storetest.DBTX, projectID uuid.UUID, hooks []Hook) error {
	for start := 0; start < len(hooks); start += batchSize {
		if err := loadBatch(ctx, db, projectID, start, hooks[start:min(start+batchSize, len(hooks))]); err != nil {
			return err
		}
	}
	return nil
}

func row(projectID uuid.UUID, n int, h Hook) storetest.CopyHooksForTestParams {
	r := storetest.CopyHooksForTestParams{
		ID:          h.ID,
		ProjectID:   projectID,
		Path:        "/load/" + strconv.Itoa(n),
		Domain:      "hooks.example.com",
		Data:        json.RawMessage(`{"n":` + strconv.Itoa(n) + `,"note":"loaded for a listing test"}`),
		PostAt:      h.PostAt,
		Status:      h.Status,
		CreatedAt:   h.CreatedAt,
		UpdatedAt:   h.CreatedAt,
		Tags:        h.Tags,
		OrderingKey: h.OrderingKey,
	}
	if h.Data != nil {
		r.Data = h.Data
	}
	if h.Status == "pending" || h.Status == "retry" {
		at := h.PostAt
		r.RunAt = &at
	}
	return r
}

// LoadRealistic loads n hooks shaped like a busy project's, generated from
// seed (the same seed gives the same hooks, ids included):
//   - created one after the other over the span before end, the last at
//     end (microsecond precision, as PostgreSQL stores them);
//   - due from right away to 7 days after creation;
//   - pending when due after end, else 90% completed, 4% failed, 3% retry
//     and 3% pending (in flight);
//   - ids are version 7 uuids of the creation time, as the gateway makes.
//
// Call Vacuum afterwards, as autovacuum would do in a while.
func LoadRealistic(ctx context.Context, db storetest.DBTX, projectID uuid.UUID, n int, span time.Duration, end time.Time, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	step := span / time.Duration(max(n, 1))
	batch := make([]Hook, 0, batchSize)
	for i := range n {
		created := end.Add(-time.Duration(n-1-i) * step).Truncate(time.Microsecond)
		post := created.Add(time.Duration(rng.Int64N(int64(7 * 24 * time.Hour)))).Truncate(time.Microsecond)
		batch = append(batch, Hook{ID: v7(created, rng), Status: realisticStatus(post, end, rng), CreatedAt: created, PostAt: post})
		if len(batch) == batchSize || i == n-1 {
			if err := loadBatch(ctx, db, projectID, i+1-len(batch), batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

func loadBatch(ctx context.Context, db storetest.DBTX, projectID uuid.UUID, first int, hooks []Hook) error {
	rows := make([]storetest.CopyHooksForTestParams, len(hooks))
	for i, h := range hooks {
		rows[i] = row(projectID, first+i, h)
	}
	if _, err := storetest.New(db).CopyHooksForTest(ctx, rows); err != nil {
		return fmt.Errorf("copy hooks: %w", err)
	}
	return nil
}

func realisticStatus(post, end time.Time, rng *rand.Rand) string {
	if post.After(end) {
		return "pending"
	}
	switch r := rng.IntN(100); {
	case r < 90:
		return "completed"
	case r < 94:
		return "failed"
	case r < 97:
		return "retry"
	default:
		return "pending"
	}
}

// v7 makes a version 7 uuid for the instant t: 48 bits of milliseconds, then
// random bits.
func v7(t time.Time, rng *rand.Rand) uuid.UUID {
	var id uuid.UUID
	binary.BigEndian.PutUint64(id[8:], rng.Uint64())
	binary.BigEndian.PutUint64(id[:8], uint64(t.UnixMilli())<<16|rng.Uint64()&0xffff)
	id[6] = id[6]&0x0f | 0x70
	id[8] = id[8]&0x3f | 0x80
	return id
}

// Vacuum refreshes the planner's statistics and the visibility map of the
// hooks table after a load.
func Vacuum(ctx context.Context, db storetest.DBTX) error {
	if err := storetest.New(db).VacuumHooksForTest(ctx); err != nil {
		return fmt.Errorf("vacuum hooks: %w", err)
	}
	return nil
}

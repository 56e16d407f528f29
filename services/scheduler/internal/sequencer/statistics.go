package sequencer

import (
	"context"
	"fmt"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// refreshStatistics runs ANALYZE on runs and steps when the planner's
// statistics lag far behind their rows (store.SequenceStatisticsStale),
// as PostgreSQL advises after a bulk load. A burst of runs is one: on
// statistics gathered before it, the planner keeps plans made for a few
// runs, and the foreign key check of each step inserted or updated kept
// scanning all of sequence_runs (its plan is cached per connection until
// the table's statistics change), which made a burst of N runs cost N^2:
// docs/sequences.md, "Bursts of runs". Autovacuum does the same, but only
// once a minute and past a higher bar.
func refreshStatistics(ctx context.Context, q *store.Queries) (done, error) {
	stale, err := q.SequenceStatisticsStale(ctx)
	if err != nil {
		return done{}, fmt.Errorf("read the statistics' age: %w", err)
	}
	if !stale {
		return done{}, nil
	}
	if err := q.AnalyzeSequenceRuns(ctx); err != nil {
		return done{}, fmt.Errorf("analyze sequence runs: %w", err)
	}
	return done{msg: "statistics of sequence runs refreshed"}, nil
}

package suite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ExpiredLoad describes how the retention scenarios' expired hooks were
// loaded.
type ExpiredLoad struct {
	// Hooks and Attempts are the rows inserted (one attempt a hook).
	Hooks    int `json:"hooks"`
	Attempts int `json:"attempts"`
	// Workers is how many connections inserted at once.
	Workers int `json:"workers"`
	// Triggers says whether the row triggers ran (see BacklogLoad).
	Triggers bool `json:"triggers"`
	// Insert and Vacuum time the stages; Seconds is all of it.
	InsertSeconds float64 `json:"insertSeconds"`
	VacuumSeconds float64 `json:"vacuumSeconds"`
	Seconds       float64 `json:"seconds"`
}

// expiredChunk is the rows one statement inserts: small enough that a
// chunk's transaction stays short, large enough that the statements' own
// cost is nothing.
const expiredChunk = 250_000

// LoadExpired inserts rows finished hooks of projectID, each with its
// attempt, that finished 60 to 90 days ago (admin.sql seed-expired), by
// INSERT ... SELECT generate_series on copyWorkers connections at once,
// then runs VACUUM (ANALYZE) on both tables. The row triggers are skipped
// when the role may, as for the backlog.
func LoadExpired(ctx context.Context, dbURL, projectID, domain string, rows int) (ExpiredLoad, error) {
	start := time.Now()
	load := ExpiredLoad{Workers: copyWorkers}
	project, err := uuid.Parse(projectID)
	if err != nil {
		return load, fmt.Errorf("project id: %w", err)
	}
	next := make(chan [2]int)
	go func() {
		defer close(next)
		for lo := 1; lo <= rows; lo += expiredChunk {
			select {
			case next <- [2]int{lo, min(lo+expiredChunk-1, rows)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range copyWorkers {
		wg.Go(func() {
			n, fired, err := insertExpired(ctx, dbURL, project, domain, rows, next)
			mu.Lock()
			defer mu.Unlock()
			load.Attempts += n
			load.Triggers = load.Triggers || fired
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	load.Hooks = load.Attempts
	load.InsertSeconds = since(start)
	if err := errors.Join(errs...); err != nil {
		return load, err
	}
	if load.Attempts != rows {
		return load, fmt.Errorf("load expired: %d hooks inserted, want %d", load.Attempts, rows)
	}
	t := time.Now()
	if err := execOn(ctx, dbURL, statement("vacuum-expired", "")); err != nil {
		return load, fmt.Errorf("vacuum expired: %w", err)
	}
	load.VacuumSeconds = since(t)
	load.Seconds = since(start)
	return load, nil
}

// insertExpired inserts the chunks it receives on one connection and says
// how many hooks (as many attempts) it inserted and whether the triggers
// ran. It drains chunks after an error, so that the feeder never blocks.
func insertExpired(ctx context.Context, dbURL string, project uuid.UUID, domain string, rows int, chunks <-chan [2]int) (int, bool, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		for range chunks {
		}
		return 0, true, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, skipErr := conn.Exec(ctx, statement("skip-triggers", ""))
	n := 0
	for c := range chunks {
		if err != nil {
			continue
		}
		tag, execErr := conn.Exec(ctx, statement("seed-expired", ""), project, domain, c[0], c[1], rows)
		if execErr != nil {
			err = fmt.Errorf("seed expired %d-%d: %w", c[0], c[1], execErr)
			continue
		}
		n += int(tag.RowsAffected())
	}
	return n, skipErr != nil, err
}

// CountExpired is how many of the seeded expired hooks of projectID, and
// attempts older than 30 days, are still in the table.
func CountExpired(ctx context.Context, dbURL, projectID string) (hooks, attempts int64, err error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.QueryRow(ctx, statement("count-expired", ""), projectID).Scan(&hooks, &attempts); err != nil {
		return 0, 0, fmt.Errorf("count expired: %w", err)
	}
	return hooks, attempts, nil
}

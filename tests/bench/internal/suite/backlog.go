package suite

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// BacklogLoad describes how a backlog was loaded.
type BacklogLoad struct {
	Rows int `json:"rows"`
	// Workers is how many COPYs ran at once.
	Workers int `json:"workers"`
	// Triggers says whether the hooks triggers (foreign key checks, the due
	// notification) ran for each row; they do not when the benchmark's
	// role may set session_replication_role.
	Triggers bool `json:"triggers"`
	// Copy and Analyze time the stages; Seconds is all of it.
	CopySeconds    float64 `json:"copySeconds"`
	AnalyzeSeconds float64 `json:"analyzeSeconds"`
	Seconds        float64 `json:"seconds"`
}

// copyWorkers is how many COPYs run at once: one per vCPU of the machine
// the figures come from; each keeps one PostgreSQL backend busy while the
// benchmark makes its rows.
const copyWorkers = 2

// LoadBacklog copies rows pending hooks of projectID into the hooks table,
// due between a year and a year and a day from now (so no scheduler ever
// claims them during a run), then analyzes the table. COPY is a data load,
// not a query: the row's columns are named here, the schema is the
// migrations'. The indexes stay: every one of them is appended to (the ids
// and postAts ascend, created_at is one instant), and dropping the
// secondary ones and building them again after the COPY measured no faster
// on the 2-vCPU machine (10,000,000 rows: 162 s either way, 1,000,000:
// 12 s).
func LoadBacklog(ctx context.Context, dbURL, projectID, domain string, rows int) (BacklogLoad, error) {
	start := time.Now()
	load := BacklogLoad{Rows: rows, Workers: copyWorkers}
	project, err := uuid.Parse(projectID)
	if err != nil {
		return load, fmt.Errorf("project id: %w", err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return load, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	t := time.Now()
	if load.Triggers, err = copyBacklog(ctx, dbURL, project, domain, rows); err != nil {
		return load, err
	}
	load.CopySeconds = since(t)
	t = time.Now()
	if _, err := conn.Exec(ctx, statement("analyze-hooks", "")); err != nil {
		return load, fmt.Errorf("analyze hooks: %w", err)
	}
	load.AnalyzeSeconds = since(t)
	load.Seconds = since(start)
	return load, nil
}

func since(t time.Time) float64 { return float64(time.Since(t).Milliseconds()) / 1000 }

// copyBacklog copies the rows in copyWorkers contiguous chunks at once. It
// says whether the row triggers ran: each connection asks to skip them
// (session_replication_role), which only a superuser may.
func copyBacklog(ctx context.Context, dbURL string, project uuid.UUID, domain string, rows int) (bool, error) {
	start := time.Now().UTC().AddDate(1, 0, 0)
	spread := 24 * time.Hour
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		triggers bool
	)
	chunk := (rows + copyWorkers - 1) / copyWorkers
	for lo := 0; lo < rows; lo += chunk {
		hi := min(lo+chunk, rows)
		wg.Go(func() {
			fired, err := copyChunk(ctx, dbURL, lo, hi, func(i int) []any {
				at := start.Add(time.Duration(int64(spread) / int64(rows) * int64(i)))
				return []any{project, "/backlog", domain, `{"n":` + strconv.Itoa(i) + `}`, at, "pending", at}
			})
			mu.Lock()
			defer mu.Unlock()
			triggers = triggers || fired
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return triggers, errors.Join(errs...)
}

// copyChunk copies rows lo to hi-1; row gives a row's columns after its
// id. The row slice is reused: pgx encodes each row before asking for the
// next.
func copyChunk(ctx context.Context, dbURL string, lo, hi int, row func(int) []any) (bool, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return true, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, skipErr := conn.Exec(ctx, statement("skip-triggers", ""))
	columns := []string{"id", "project_id", "path", "domain", "data", "post_at", "status", "run_at", "created_at", "updated_at"}
	now := time.Now().UTC()
	i := lo
	buf := make([]any, 0, len(columns))
	source := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= hi {
			return nil, nil
		}
		buf = append(append(append(buf[:0], backlogID(now, i)), row(i)...), now, now)
		i++
		return buf, nil
	})
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"hooks"}, columns, source)
	if err != nil {
		return skipErr != nil, fmt.Errorf("copy backlog: %w", err)
	}
	if int(n) != hi-lo {
		return skipErr != nil, fmt.Errorf("copy backlog: %d rows copied, want %d", n, hi-lo)
	}
	return skipErr != nil, nil
}

// backlogID is row i's id: a UUIDv7 of now whose last 8 bytes are i, so
// ids are unique across the chunks and ascend as the API's do (the primary
// key is appended to, not split), at a fraction of uuid.NewV7's cost.
func backlogID(now time.Time, i int) uuid.UUID {
	var id uuid.UUID
	ms := uint64(now.UnixMilli())
	binary.BigEndian.PutUint64(id[0:8], ms<<16|0x7000) // 48-bit time, version 7
	binary.BigEndian.PutUint64(id[8:16], uint64(i)|0x8000_0000_0000_0000)
	return id
}

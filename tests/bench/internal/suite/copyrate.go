package suite

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CopyRate is PostgreSQL's own rate of writing hooks: COPYs of rows like
// those POST /v1/hooks/batch inserts.
type CopyRate struct {
	Rows int `json:"rows"`
	// Connections is how many COPYs ran at once, each of a contiguous
	// share of the rows.
	Connections int     `json:"connections"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"perSecond"`
}

// MeasureCopy copies rows pending hooks of projectID into the hooks table
// with copyWorkers COPYs at once (one per vCPU, as the batch intake's
// concurrent requests keep every vCPU busy) and times them: what the batch
// intake is measured against.
// Each row has the columns the API's insert sets (a UUIDv7 id, the
// project, path, domain, a small JSON payload, post_at and run_at a year
// ahead); the others take their defaults, as they do for the API. Unlike
// LoadBacklog the row triggers run (the projects foreign key check, the
// due notification's condition), as they do for the API's insert. The
// rows are made before the clock starts, so the figure is the COPY's:
// pgx's encoding and PostgreSQL's parsing, inserting and indexing.
func MeasureCopy(ctx context.Context, dbURL, projectID, domain string, rows int) (CopyRate, error) {
	out := CopyRate{Rows: rows}
	project, err := uuid.Parse(projectID)
	if err != nil {
		return out, fmt.Errorf("project id: %w", err)
	}
	at := time.Now().UTC().AddDate(1, 0, 0)
	data := make([][]any, rows)
	for i := range data {
		id, err := uuid.NewV7()
		if err != nil {
			return out, err
		}
		data[i] = []any{id, project, "/bench/copy", domain, `{"n":` + strconv.Itoa(i) + `}`, at, at}
	}
	out.Connections = copyWorkers
	conns := make([]*pgx.Conn, copyWorkers)
	for i := range conns {
		if conns[i], err = pgx.Connect(ctx, dbURL); err != nil {
			return out, err
		}
		defer conns[i].Close(context.WithoutCancel(ctx))
	}
	columns := []string{"id", "project_id", "path", "domain", "data", "post_at", "run_at"}
	chunk := (rows + copyWorkers - 1) / copyWorkers
	errs := make([]error, copyWorkers)
	var wg sync.WaitGroup
	start := time.Now()
	for w, conn := range conns {
		part := data[min(w*chunk, rows):min((w+1)*chunk, rows)]
		wg.Go(func() {
			n, err := conn.CopyFrom(ctx, pgx.Identifier{"hooks"}, columns, pgx.CopyFromRows(part))
			if err == nil && int(n) != len(part) {
				err = fmt.Errorf("%d rows copied, want %d", n, len(part))
			}
			errs[w] = err
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("copy hooks: %w", err)
	}
	out.Seconds = elapsed.Seconds()
	out.PerSecond = float64(rows) / elapsed.Seconds()
	return out, nil
}

package bulkjob

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/pagecursor"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// DefaultListed is a page of GET /v1/bulk-jobs without a limit.
const DefaultListed = 20

// maxCount caps a listing's TotalItems, as the other listings do.
const maxCount = 100_000

// Page is a listing's query: its size and where it starts.
type Page struct {
	Limit int
	// Cursor is the previous page's NextCursor; empty: the first page.
	Cursor string
}

// ValidPage checks a listing's limit, 1 to MaxListed (DefaultListed when
// nil), and its cursor, as a *bulk.InvalidError naming the parameter.
func ValidPage(limit *int, cursor *string) (Page, error) {
	pg := Page{Limit: DefaultListed}
	if limit != nil {
		if *limit < 1 || *limit > MaxListed {
			return Page{}, &bulk.InvalidError{Problems: []bulk.Problem{
				{Field: "limit", Message: fmt.Sprintf("must be from 1 to %d", MaxListed)}}}
		}
		pg.Limit = *limit
	}
	if cursor != nil {
		pg.Cursor = *cursor
		if _, err := decodeCursor(pg.Cursor); err != nil {
			return Page{}, err
		}
	}
	return pg, nil
}

// JobPage is a page of a project's jobs, newest first.
type JobPage struct {
	Jobs []Job
	// TotalItems counts the project's jobs, exactly up to maxCount (then
	// it is maxCount and Capped is set).
	TotalItems int64
	Capped     bool
	// NextCursor is empty on the last page.
	NextCursor string
}

// ListPage returns a page of the project's jobs, newest first.
func (s *Service) ListPage(ctx context.Context, projectID uuid.UUID, pg Page) (JobPage, error) {
	after, err := decodeCursor(pg.Cursor)
	if err != nil {
		return JobPage{}, err
	}
	// One more than the page, to know whether another follows.
	jobs, err := s.List(ctx, projectID, after, pg.Limit+1)
	if err != nil {
		return JobPage{}, err
	}
	total, err := store.New(s.pool).CountBulkJobs(ctx, store.CountBulkJobsParams{ProjectID: projectID, MaxCount: maxCount + 1})
	if err != nil {
		return JobPage{}, fmt.Errorf("count bulk jobs: %w", postgres.Translate(err))
	}
	out := JobPage{TotalItems: min(total, maxCount), Capped: total > maxCount, Jobs: make([]Job, 0, min(len(jobs), pg.Limit))}
	if len(jobs) > pg.Limit {
		jobs = jobs[:pg.Limit]
		out.NextCursor = encodeCursor(jobs[len(jobs)-1])
	}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, Job{BulkJob: j})
	}
	return out, nil
}

// A cursor names the last job of a page by its created_at and id, the
// listing's order. Like the other listings' cursors it is opaque and
// checked, not secret: it only names a place in the order, and every page
// is read within the caller's project whatever the cursor says.
const (
	cursorVersion = 1
	bodyLen       = 8 + 16
)

// encodeCursor seals the job's created_at and id (pagecursor).
func encodeCursor(j store.BulkJob) string {
	b := make([]byte, 0, bodyLen)
	b = binary.BigEndian.AppendUint64(b, uint64(j.CreatedAt.UnixMicro()))
	return pagecursor.Seal(cursorVersion, append(b, j.ID[:]...))
}

// decodeCursor returns the job a cursor names, with its created_at and id
// only, or nil for the first page.
func decodeCursor(s string) (*store.BulkJob, error) {
	if s == "" {
		return nil, nil
	}
	body, err := pagecursor.Open(s, cursorVersion)
	if err != nil || len(body) != bodyLen {
		return nil, &bulk.InvalidError{Problems: []bulk.Problem{{Field: "cursor", Message: "is not a cursor of this listing, or it was altered; " +
			"pass meta.nextCursor unchanged, or start again without cursor"}}}
	}
	j := &store.BulkJob{CreatedAt: time.UnixMicro(int64(binary.BigEndian.Uint64(body[0:8]))).UTC()}
	copy(j.ID[:], body[8:])
	return j, nil
}

package suite

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CloneSequences copies the sequence templateID, which the API created,
// copies times in one statement (admin.sql, clone-sequences: every column
// as the API wrote it but the id, the name and the creation time), then
// analyzes the table. It returns how long the copy and the ANALYZE took.
func CloneSequences(ctx context.Context, dbURL string, templateID uuid.UUID, copies int) (time.Duration, error) {
	start := time.Now()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tag, err := conn.Exec(ctx, statement("clone-sequences", ""), templateID, copies)
	if err != nil {
		return 0, fmt.Errorf("clone sequences: %w", err)
	}
	if int(tag.RowsAffected()) != copies {
		return 0, fmt.Errorf("clone sequences: %d rows inserted, want %d", tag.RowsAffected(), copies)
	}
	if _, err := conn.Exec(ctx, statement("analyze-sequences", "")); err != nil {
		return 0, fmt.Errorf("analyze sequences: %w", err)
	}
	return time.Since(start), nil
}

// SlotRuns counts the scheduled runs of slot.
func SlotRuns(ctx context.Context, conn *pgx.Conn, slot time.Time) (int, error) {
	var n int
	if err := conn.QueryRow(ctx, statement("slot-runs", ""), slot).Scan(&n); err != nil {
		return 0, fmt.Errorf("slot runs: %w", err)
	}
	return n, nil
}

// RunHook is the hook of a root step of a run, and when its run started.
type RunHook struct {
	HookID    uuid.UUID
	StartedAt time.Time
}

// SlotRunHooks reads the root step hooks of the scheduled runs of slot.
func SlotRunHooks(ctx context.Context, conn *pgx.Conn, slot time.Time) ([]RunHook, error) {
	rows, err := conn.Query(ctx, statement("slot-run-hooks", ""), slot)
	if err != nil {
		return nil, fmt.Errorf("slot run hooks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunHook, error) {
		var h RunHook
		err := r.Scan(&h.HookID, &h.StartedAt)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("slot run hooks: %w", err)
	}
	return out, nil
}

// RestartService stops a service and starts it again with the same
// settings (a fresh process: its peak RSS starts anew).
func (s *Suite) RestartService(ctx context.Context, name string) error {
	if err := s.StopService(name); err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	return s.startService(ctx, name)
}

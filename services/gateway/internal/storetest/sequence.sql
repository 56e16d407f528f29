-- Test fixtures and read-backs beside store/sequence.sql: runs and their
-- steps as the scheduler (their only writer) would have left them.

-- name: InsertSequenceRunForTest :exec
INSERT INTO sequence_runs (id, project_id, sequence_id, slot, trigger, status, skip_reason, finished_at)
VALUES (@id, @project_id, @sequence_id, @slot, @trigger, @status, sqlc.narg(skip_reason), sqlc.narg(finished_at));

-- name: InsertSequenceRunStepForTest :exec
INSERT INTO sequence_run_steps (run_id, name, depends_on, hook_id, status)
VALUES (@run_id, @name, @depends_on, sqlc.narg(hook_id), @status);

-- name: ListSequenceTriggersForTest :many
SELECT * FROM sequence_triggers WHERE sequence_id = @sequence_id ORDER BY requested_at, run_id;

-- name: CountSequenceRunsForTest :one
SELECT count(*) FROM sequence_runs WHERE sequence_id = @sequence_id;

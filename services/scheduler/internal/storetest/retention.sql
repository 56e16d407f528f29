-- Test fixtures of the retention cleaner's tests (internal/retention).

-- name: SetRetentionForTest :execrows
-- What PATCH /v1/project retentionDays and the operator's set-plan
-- --max-retention-days write.
UPDATE projects
SET retention_days = sqlc.arg(retention_days), plan_max_retention_days = sqlc.arg(plan_max_retention_days)
WHERE id = sqlc.arg(id);

-- name: AgeHookForTest :execrows
-- Puts a hook in a status as if it had last changed age_seconds ago by the
-- database clock: completed and failed without run_at, pending and retry
-- due an hour from now.
UPDATE hooks
SET status     = sqlc.arg(status),
    run_at     = CASE WHEN sqlc.arg(status)::text IN ('pending', 'retry') THEN now() + interval '1 hour' END,
    attempts   = sqlc.arg(attempts),
    updated_at = now() - make_interval(secs => sqlc.arg(age_seconds)::float8)
WHERE id = sqlc.arg(id);

-- name: InsertAttemptForTest :exec
-- An attempt row as the result path writes it.
INSERT INTO hook_attempts (hook_id, attempt, lease_seq, started_at, duration_seconds, outcome, status_code)
VALUES (sqlc.arg(hook_id), sqlc.arg(attempt), 1, now(), 0.01, 'success', 200);

-- name: CountAttemptsForTest :one
SELECT count(*)::bigint FROM hook_attempts WHERE hook_id = ANY(sqlc.arg(hook_ids)::uuid[]);

-- name: ExistingHooksForTest :many
-- Which of the given hooks are still there.
SELECT id FROM hooks WHERE id = ANY(sqlc.arg(ids)::uuid[]);

-- name: InsertRunStepForTest :exec
-- A step of a run as runstep leaves it: pending with its hook, or
-- finished as its hook did.
INSERT INTO sequence_run_steps (run_id, name, hook_id, status)
VALUES (sqlc.arg(run_id), sqlc.arg(name), sqlc.arg(hook_id), sqlc.arg(status));

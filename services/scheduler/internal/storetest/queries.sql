-- Test fixtures of the scheduler's tests (the gateway creates and changes
-- projects and hooks in production): hooks in the states other services
-- leave them in, and reads of what the scheduler wrote.

-- name: InsertProjectForTest :exec
-- Test fixture (the gateway creates projects in production); only tests use
-- the queries named ...ForTest. The scheduler never opens the async secret:
-- a placeholder stands in for the sealed value.
INSERT INTO projects (
    id, name, domain, retry_min_retries, retry_delay_secs, retry_strategy,
    retry_backoff_factor, retry_max_delay_secs, retry_jitter, async_secret_sealed
) VALUES (
    sqlc.arg(id), sqlc.arg(name), sqlc.arg(domain), sqlc.arg(retry_min_retries),
    sqlc.arg(retry_delay_secs), sqlc.arg(retry_strategy), sqlc.arg(retry_backoff_factor),
    sqlc.arg(retry_max_delay_secs), sqlc.arg(retry_jitter), 'v1:test:unopened'
);

-- name: InsertHookForTest :one
-- A new pending hook due due_in_seconds from the database's now (negative:
-- overdue), with an ordering key or none (NULL).
INSERT INTO hooks (id, project_id, path, domain, data, post_at, run_at, retry_override, ordering_key)
VALUES (
    sqlc.arg(id), sqlc.arg(project_id), sqlc.arg(path), sqlc.arg(domain), sqlc.arg(data),
    now() + make_interval(secs => sqlc.arg(due_in_seconds)::float8),
    now() + make_interval(secs => sqlc.arg(due_in_seconds)::float8),
    sqlc.narg(retry_override), sqlc.narg(ordering_key)
)
RETURNING *;

-- name: RetryFailedHookForTest :execrows
-- What the gateway's bulk retry does to a failed hook: a fresh retry budget
-- counted from the attempts already made, due now.
UPDATE hooks
SET status            = 'pending',
    retry_budget_base = attempts,
    run_at            = now(),
    lease_expires_at  = NULL,
    was_notified      = false,
    updated_at        = now()
WHERE id = sqlc.arg(id) AND status = 'failed';

-- name: MakeDueForTest :execrows
-- Brings a waiting retry forward to now, so a test need not wait its delay.
UPDATE hooks SET run_at = now() WHERE id = sqlc.arg(id) AND status = 'retry';

-- name: GetHookForTest :one
SELECT * FROM hooks WHERE id = sqlc.arg(id);

-- name: ListAttemptsForTest :many
SELECT * FROM hook_attempts WHERE hook_id = sqlc.arg(hook_id) ORDER BY attempt;

-- name: DeleteHookForTest :execrows
-- What the gateway's cancel does: the row is gone.
DELETE FROM hooks WHERE id = sqlc.arg(id);

-- name: DatabaseNowForTest :one
SELECT now()::timestamptz AS now;

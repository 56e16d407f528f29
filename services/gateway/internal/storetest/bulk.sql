-- Test fixtures and read-backs beside store/bulk.sql: only tests and
-- benchmarks use them.

-- name: InsertProjectForBulkTest :exec
-- Test fixtures: only tests use the queries named ...ForBulkTest. Bulk
-- operations never open the async secret: a placeholder stands in for the
-- sealed value.
INSERT INTO projects (id, name, domain, plan_quota, plan_hard_cap_percent, async_secret_sealed)
VALUES (@id, 'bulk test', @domain, @plan_quota, @plan_hard_cap_percent, 'v1:test:unopened');

-- name: InsertHookForBulkTest :one
-- A hook in any state, as the scheduler would have left it; timezone set
-- makes it a hook scheduled at a local time.
INSERT INTO hooks (
    id, project_id, path, domain, data, post_at, status, attempts, failure_error, try_at,
    was_notified, retry_override, sequence_id, tags, key, run_at, post_at_local, timezone, tz_version
) VALUES (
    @id, @project_id, @path, @domain, @data, @post_at, @status, @attempts, sqlc.narg(failure_error),
    sqlc.narg(try_at), @was_notified, sqlc.narg(retry_override), sqlc.narg(sequence_id), sqlc.narg(tags)::text[], sqlc.narg(key),
    CASE WHEN @status::text IN ('pending', 'retry') THEN @post_at::timestamptz END,
    CASE WHEN sqlc.narg(timezone)::text IS NOT NULL THEN @post_at::timestamp END, sqlc.narg(timezone),
    CASE WHEN sqlc.narg(timezone)::text IS NOT NULL THEN '2025c' END
)
RETURNING *;

-- name: GetHookForBulkTest :one
SELECT * FROM hooks WHERE id = @id;

-- name: ListProjectHooksForBulkTest :many
SELECT * FROM hooks WHERE project_id = @project_id ORDER BY created_at, id;

-- name: InsertAttemptForBulkTest :exec
INSERT INTO hook_attempts (hook_id, attempt, lease_seq, started_at, duration_seconds, outcome)
VALUES (@hook_id, @attempt, 1, now(), 0.1, 'failure');

-- name: CountAttemptsForBulkTest :one
SELECT count(*) FROM hook_attempts WHERE hook_id = @hook_id;

-- name: GetUsageForBulkTest :one
SELECT COALESCE(sum(hooks_created), 0)::bigint AS hooks_created
FROM usage_periods WHERE project_id = @project_id;

-- name: InsertHooksForBulkBench :execrows
-- Benchmark fixture: n hooks of one status, one second apart from start.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, status, attempts, run_at)
SELECT gen_random_uuid(), @project_id, '/bench', 'receiver.example.com', '{"n":1}'::jsonb,
       sqlc.arg(start)::timestamptz + make_interval(secs => g.i::float8), @status::text,
       CASE WHEN @status::text = 'pending' THEN 0 ELSE 1 END,
       CASE WHEN @status::text IN ('pending', 'retry') THEN sqlc.arg(start)::timestamptz + make_interval(secs => g.i::float8) END
FROM generate_series(1, @n::integer) AS g (i);

-- name: FailHooksForBulkBench :execrows
-- Benchmark fixture: the project's pending hooks of a range failed again.
UPDATE hooks
SET status = 'failed', run_at = NULL, retry_budget_base = 0
WHERE project_id = @project_id AND status = 'pending' AND post_at >= @start AND post_at < @end_time;

-- name: AnalyzeHooksForBulkBench :exec
-- Benchmark fixture: fresh statistics after a bulk insert, as autovacuum
-- would have them in a running deployment.
ANALYZE hooks;

-- name: CountLockWaitsForBulkTest :one
-- Sessions of this database waiting for a lock another holds.
SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock';

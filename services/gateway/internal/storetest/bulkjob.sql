-- Fixtures of the bulk jobs' tests (internal/bulkjob): only tests use them.

-- name: InsertHooksForJobTest :exec
-- n hooks of the project in status, one a second from start (the first
-- at start), each with tags, as the scheduler would have left them.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, status, attempts, failure_error, try_at, tags, run_at)
SELECT gen_random_uuid(), sqlc.arg(project_id)::uuid, '/hook', 'receiver.example.com', jsonb_build_object('n', g.i),
    sqlc.arg(start)::timestamptz + make_interval(secs => g.i),
    sqlc.arg(status)::text,
    CASE WHEN sqlc.arg(status)::text IN ('failed', 'completed', 'retry') THEN 1 ELSE 0 END,
    CASE WHEN sqlc.arg(status)::text IN ('failed', 'retry') THEN 'HTTP 503' END,
    CASE WHEN sqlc.arg(status)::text <> 'pending' THEN sqlc.arg(start)::timestamptz + make_interval(secs => g.i) END,
    sqlc.narg(tags)::text[],
    CASE WHEN sqlc.arg(status)::text IN ('pending', 'retry') THEN sqlc.arg(start)::timestamptz + make_interval(secs => g.i) END
FROM generate_series(0, sqlc.arg(n)::integer - 1) AS g (i);

-- name: CountHooksForJobTest :one
SELECT count(*)::bigint FROM hooks WHERE project_id = @project_id AND status = @status;

-- name: ExpireBulkJobLeaseForTest :execrows
-- A runner that died: its job's lease has run out.
UPDATE bulk_jobs SET lease_expires_at = now() - interval '1 second' WHERE id = @id;

-- name: InsertLeasedBulkJobForTest :one
-- A running cancel job over [start_time, end_time) that a runner of
-- another gateway holds for an hour, so that it stays running whatever
-- the test's own runners do.
INSERT INTO bulk_jobs (id, project_id, action, start_time, end_time, total, runner, lease_expires_at)
VALUES (@id, @project_id, 'cancel', @start_time, @end_time, @total, 'elsewhere', now() + interval '1 hour')
RETURNING *;

-- name: LockHookAtForTest :exec
-- Holds the project's hook due at post_at locked until the caller's
-- transaction ends, so that a job's batch that reaches it waits there.
SELECT id FROM hooks WHERE project_id = @project_id AND post_at = @post_at FOR UPDATE;

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

-- Bulk jobs (internal/bulkjob; migration 00037; docs/choices.md, "Bulk
-- jobs"). A job's batches select the next hooks of its selection after its
-- cursor (SelectBulkJobBatch), act on them with the bulk action's by-id
-- statements (bulk.sql), and record the progress (RecordBulkJobBatch), all
-- in one transaction.

-- name: InsertBulkJob :one
INSERT INTO bulk_jobs (
    id, project_id, action, start_time, end_time, path, path_base, sequence_id, tags,
    new_path, new_data, new_post_at, total
) VALUES (
    @id, @project_id, @action, @start_time, @end_time, sqlc.narg(path), sqlc.narg(path_base),
    sqlc.narg(sequence_id), sqlc.narg(tags), sqlc.narg(new_path), sqlc.narg(new_data),
    sqlc.narg(new_post_at), @total
)
RETURNING *;

-- name: SelectBulkJobBatch :many
-- Up to max_hooks hooks of the project in one of statuses, in the range and
-- filters, after the cursor (after_post_at, after_id; NULL: from the
-- start), by post_at then id. Each status is read in order from the index
-- (project_id, status, post_at, id) and the reads merged, as
-- CancelHooksInRange does, so a batch costs max_hooks index entries per
-- status whatever the selection's size. Nothing is locked: the action's
-- by-id statement locks and re-checks each hook.
SELECT b.id, b.post_at
FROM unnest(@statuses::text[]) AS st (status)
CROSS JOIN LATERAL (
    SELECT s.id, s.post_at
    FROM hooks AS s
    WHERE s.project_id = @project_id
      AND s.status = st.status
      AND s.post_at >= @start_time AND s.post_at < @end_time
      AND (s.post_at, s.id) > (COALESCE(sqlc.narg(after_post_at)::timestamptz, '-infinity'::timestamptz),
                               COALESCE(sqlc.narg(after_id)::uuid, '00000000-0000-0000-0000-000000000000'::uuid))
      AND (sqlc.narg(path)::text IS NULL OR s.path = sqlc.narg(path)::text)
      AND (sqlc.narg(path_base)::text IS NULL OR split_part(s.path, '?', 1) = sqlc.narg(path_base)::text)
      AND (sqlc.narg(sequence_id)::uuid IS NULL OR s.sequence_id = sqlc.narg(sequence_id)::uuid)
      AND (sqlc.narg(tags)::text[] IS NULL OR s.tags @> sqlc.narg(tags)::text[])
    ORDER BY s.post_at, s.id
    LIMIT @max_hooks::integer
) AS b
ORDER BY b.post_at, b.id
LIMIT @max_hooks::integer;

-- name: CountBulkJobSelection :one
-- How many hooks of the project in one of statuses the selection holds now:
-- a job's total, and a dry run's answer.
SELECT count(*)::bigint AS total
FROM hooks AS s
WHERE s.project_id = @project_id
  AND s.status = ANY(@statuses::text[])
  AND s.post_at >= @start_time AND s.post_at < @end_time
  AND (sqlc.narg(path)::text IS NULL OR s.path = sqlc.narg(path)::text)
  AND (sqlc.narg(path_base)::text IS NULL OR split_part(s.path, '?', 1) = sqlc.narg(path_base)::text)
  AND (sqlc.narg(sequence_id)::uuid IS NULL OR s.sequence_id = sqlc.narg(sequence_id)::uuid)
  AND (sqlc.narg(tags)::text[] IS NULL OR s.tags @> sqlc.narg(tags)::text[]);

-- name: TakeBulkJob :one
-- Leases the oldest unfinished job that no runner holds (never leased, or
-- its runner's lease ran out) to runner until lease_seconds from now.
UPDATE bulk_jobs AS j
SET runner = @runner::text, lease_expires_at = now() + make_interval(secs => @lease_seconds::float8), updated_at = now()
WHERE j.id = (
    SELECT c.id FROM bulk_jobs AS c
    WHERE c.state IN ('running', 'cancelling')
      AND (c.lease_expires_at IS NULL OR c.lease_expires_at < now())
    ORDER BY c.lease_expires_at NULLS FIRST, c.created_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
RETURNING *;

-- name: RecordBulkJobBatch :one
-- A batch's progress, in the batch's transaction, while runner still holds
-- the job's lease (which it extends): nothing when the lease was lost, and
-- the caller then rolls the batch back. Returns the job's state, so that a
-- cancel is seen before the next batch.
UPDATE bulk_jobs
SET cursor_post_at   = @cursor_post_at,
    cursor_id        = @cursor_id,
    selected         = selected + @selected::bigint,
    affected         = affected + @affected::bigint,
    batches          = batches + 1,
    lease_expires_at = now() + make_interval(secs => @lease_seconds::float8),
    updated_at       = now()
WHERE id = @id AND runner = @runner::text AND state IN ('running', 'cancelling')
RETURNING state;

-- name: FinishBulkJob :execrows
-- Ends the job runner holds: completed (its selection is done), cancelled,
-- or failed with error_code and error.
UPDATE bulk_jobs
SET state = @state, error_code = sqlc.narg(error_code), error = sqlc.narg(error),
    finished_at = now(), updated_at = now(), lease_expires_at = NULL
WHERE id = @id AND runner = @runner::text AND state IN ('running', 'cancelling');

-- name: ReleaseBulkJob :exec
-- A runner that stops hands its job on at once instead of at its lease's end.
UPDATE bulk_jobs SET lease_expires_at = NULL, runner = NULL, updated_at = now()
WHERE id = @id AND runner = @runner::text AND state IN ('running', 'cancelling');

-- name: GetBulkJob :one
SELECT * FROM bulk_jobs WHERE project_id = @project_id AND id = @id;

-- name: ListBulkJobs :many
-- The project's jobs newest first, after the cursor (before_created_at,
-- before_id; NULL: from the newest).
SELECT * FROM bulk_jobs
WHERE project_id = @project_id
  AND (created_at, id) < (COALESCE(sqlc.narg(before_created_at)::timestamptz, 'infinity'::timestamptz),
                          COALESCE(sqlc.narg(before_id)::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid))
ORDER BY created_at DESC, id DESC
LIMIT @max_jobs::integer;

-- name: CountBulkJobs :one
-- The project's jobs, counted up to max_count: a listing's totalItems.
SELECT count(*) FROM (
    SELECT 1 FROM bulk_jobs WHERE project_id = @project_id LIMIT @max_count::integer
) AS j;

-- name: CancelBulkJob :one
-- Asks a running job to stop: its runner stops before its next batch. A job
-- that has not started a batch yet, or whose runner is gone, is cancelled
-- by the next runner that takes it, before any batch.
UPDATE bulk_jobs SET state = 'cancelling', updated_at = now()
WHERE project_id = @project_id AND id = @id AND state = 'running'
RETURNING *;

-- name: LockBulkJobCreates :exec
-- Serializes a project's job creates until the transaction ends, so that
-- two cannot both pass the bound on unfinished jobs.
SELECT pg_advisory_xact_lock(hashtextextended('bulk_jobs/' || CAST(@project_id::uuid AS text), 0));

-- name: CountUnfinishedBulkJobs :one
SELECT count(*)::bigint AS unfinished
FROM bulk_jobs
WHERE project_id = @project_id AND state IN ('running', 'cancelling');

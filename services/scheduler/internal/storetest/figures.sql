-- Fixtures and reads of the dashboard's figures (delivery_minutes).

-- name: ListDeliveryMinutesForTest :many
SELECT project_id, minute, succeeded, failed, async, lateness_buckets
FROM delivery_minutes
WHERE project_id = sqlc.arg(project_id)
ORDER BY minute;

-- name: InsertDeliveryMinuteForTest :exec
INSERT INTO delivery_minutes (project_id, minute, succeeded, failed, async, lateness_buckets)
VALUES (sqlc.arg(project_id), sqlc.arg(minute), sqlc.arg(succeeded), 0, 0, sqlc.arg(lateness_buckets)::bigint[]);

-- name: CountDeliveryMinutesForTest :one
SELECT count(*) FROM delivery_minutes WHERE project_id = sqlc.arg(project_id);

-- name: CountLockWaitersForTest :one
-- Backends of this database waiting for a lock (a row held by another
-- transaction).
SELECT count(*) FROM pg_catalog.pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock';

-- name: SetPostAtForTest :execrows
-- Gives hooks one postAt, so that a test knows both the lateness and the
-- minute of the attempts it reports.
UPDATE hooks SET post_at = sqlc.arg(post_at) WHERE id = ANY(sqlc.arg(ids)::uuid[]);

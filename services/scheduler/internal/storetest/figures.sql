-- Fixtures and reads of the dashboard's figures (delivery_minutes).

-- name: ListDeliveryMinutesForTest :many
-- A project's steps of one length (step_seconds), their shards summed as
-- the overview reads them: the counts added, the histograms added element
-- by element.
SELECT d.project_id, d.minute,
    sum(d.succeeded)::integer AS succeeded,
    sum(d.failed)::integer AS failed,
    sum(d.async)::integer AS async,
    COALESCE((
        SELECT array_agg(x.total ORDER BY x.i)
        FROM (
            SELECT u.i, sum(u.b)::bigint AS total
            FROM delivery_minutes AS d2, unnest(d2.lateness_buckets) WITH ORDINALITY AS u(b, i)
            WHERE d2.project_id = d.project_id AND d2.step_seconds = d.step_seconds AND d2.minute = d.minute
            GROUP BY u.i
        ) AS x
    ), '{}')::bigint[] AS lateness_buckets
FROM delivery_minutes AS d
WHERE d.project_id = sqlc.arg(project_id) AND d.step_seconds = sqlc.arg(step_seconds)
GROUP BY d.project_id, d.step_seconds, d.minute
ORDER BY d.minute;

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

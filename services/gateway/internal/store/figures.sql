-- name: ListDeliveryMinutes :many
-- The rows of a project's figures since a minute, every shard, for the
-- dashboard's overview (docs/dashboard.md, "Reading the figures"): the
-- caller sums the shards and the steps in Go (at most 80,640 rows for 7 d).
SELECT minute, succeeded, failed, async, lateness_buckets
FROM delivery_minutes
WHERE project_id = @project_id AND minute >= @since
ORDER BY minute;

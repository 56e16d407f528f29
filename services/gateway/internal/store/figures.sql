-- name: ListDeliveryMinutes :many
-- The rows of a project's figures of one step length since a minute,
-- every shard, for the dashboard's overview (docs/dashboard.md, "Reading
-- the figures"): the caller sums the shards in Go (at most 8 rows per
-- step: 2,304 for 24 h per 5 minutes).
SELECT minute, succeeded, failed, async, lateness_buckets
FROM delivery_minutes
WHERE project_id = @project_id AND step_seconds = @step_seconds AND minute >= @since
ORDER BY minute;

-- name: InsertDeliveryMinute :exec
-- A row of the dashboard's figures, as the scheduler writes them.
INSERT INTO delivery_minutes (project_id, minute, shard, succeeded, failed, async, lateness_buckets)
VALUES (@project_id, @minute, @shard, @succeeded, @failed, @async, @lateness_buckets);

-- name: InsertDeliveryMinute :exec
-- A row of the dashboard's figures, as the scheduler writes them: minute is
-- the first minute of a step of step_seconds.
INSERT INTO delivery_minutes (project_id, step_seconds, minute, shard, succeeded, failed, async, lateness_buckets)
VALUES (@project_id, @step_seconds, @minute, @shard, @succeeded, @failed, @async, @lateness_buckets);

-- name: InsertAttemptForDashboardTest :exec
-- A failed attempt with what the receiver answered, as the scheduler
-- records it.
INSERT INTO hook_attempts (hook_id, attempt, lease_seq, started_at, duration_seconds, outcome,
    status_code, error, response_excerpt)
VALUES (@hook_id, @attempt, 1, now(), 0.25, 'failure', @status_code, @error, @response_excerpt);

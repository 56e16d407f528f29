-- Test fixtures and read-backs beside store/alert.sql: only tests and
-- benchmarks use them.

-- name: ListAlertsForTest :many
-- Test fixture: a project's alerts, oldest first.
SELECT id, kind, body, occurred_at, group_id
FROM alerts
WHERE project_id = @project_id
ORDER BY created_at, id;

-- name: GetAlertGroupForTest :one
-- Test fixture: the group an alert was taken into, or NULL.
SELECT group_id FROM alerts WHERE id = @id;

-- name: InsertAlertGroupForTest :exec
-- Test fixture: the notifier taking an alert into a group of its own.
INSERT INTO alert_groups (id, project_id, kind, channel_id, send_at, closed_at, alert_count)
VALUES (@id, @project_id, @kind, @channel_id, now(), now(), 1);

-- name: SetAlertGroupForTest :exec
UPDATE alerts SET group_id = @group_id WHERE id = @id;

-- name: InsertAlertSendForTest :exec
INSERT INTO alert_sends (group_id, target, channel_id, state, attempts)
VALUES (@group_id, @target, @channel_id, @state, @attempts);

-- name: InsertAlertSendAttemptForTest :exec
INSERT INTO alert_send_attempts (group_id, target, attempt, channel_id, started_at, duration_seconds, outcome, error)
VALUES (@group_id, @target, @attempt, @channel_id, @started_at, @duration_seconds, @outcome, @error);

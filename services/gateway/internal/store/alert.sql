-- Alerts (the outbox of internal/quota and internal/channel): a producer
-- writes an alert in the transaction of the change that caused it; the
-- notifier takes it into a group and records its sends.

-- name: InsertAlert :execrows
-- The outbox: an alert written in the transaction of the change that
-- caused it. Its id is deterministic, so writing it twice is one alert.
INSERT INTO alerts (id, project_id, kind, body, occurred_at)
VALUES (@id, @project_id, @kind, @body, @occurred_at)
ON CONFLICT (id) DO NOTHING;

-- name: FirstAlertSendAttempt :one
-- The first try of the send of an alert to a channel, once the notifier
-- has taken the alert into a group and tried it (no row before that).
SELECT a.outcome, a.duration_seconds, a.error
FROM alerts AS al
JOIN alert_send_attempts AS a ON a.group_id = al.group_id
WHERE al.id = @alert_id AND a.channel_id = @channel_id
ORDER BY a.attempt
LIMIT 1;

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

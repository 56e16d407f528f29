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

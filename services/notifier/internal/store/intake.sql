-- Taking alerts in: every alert joins an alert group (docs/product.md
-- "Notifications", docs/notifications.md "Grouping").

-- name: InsertAlert :exec
-- The outbox row, in case the producer did not write it (it normally has:
-- then this is a no-op). Nothing is written for a project that no longer
-- exists, so the FOR UPDATE that follows finds no row.
INSERT INTO alerts (id, project_id, kind, body, occurred_at)
SELECT sqlc.arg(id), p.id, sqlc.arg(kind), sqlc.arg(body), sqlc.arg(occurred_at)
FROM projects AS p
WHERE p.id = sqlc.arg(project_id)
ON CONFLICT (id) DO NOTHING;

-- name: LockAlert :one
-- Serialises two intakes of the same alert (the event and the sweeper).
SELECT id, project_id, kind, body, group_id
FROM alerts
WHERE id = $1
FOR UPDATE;

-- name: OpenFailureGroup :exec
-- Opens the project's failure group unless one is open. It is due after
-- the project's group wait, and not before the follow-up time when a
-- failure message went out recently (within the quiet period, as long as
-- the follow-up maximum).
INSERT INTO alert_groups (id, project_id, kind, send_at)
SELECT sqlc.arg(id), p.id, 'hook.failed',
    CASE
        WHEN f.project_id IS NOT NULL
         AND now() < f.last_sent_at + make_interval(secs => p.alert_followup_max_secs)
        THEN GREATEST(now() + make_interval(secs => p.alert_group_wait_secs),
                      f.last_sent_at + make_interval(secs => f.followup_secs))
        ELSE now() + make_interval(secs => p.alert_group_wait_secs)
    END
FROM projects AS p
LEFT JOIN alert_followups AS f ON f.project_id = p.id
WHERE p.id = sqlc.arg(project_id)
ON CONFLICT (project_id, kind) WHERE closed_at IS NULL DO NOTHING;

-- name: LockOpenGroup :one
-- The project's open group of a kind, locked so that the closer (which
-- skips locked groups) cannot close it while an alert joins it.
SELECT id, (send_at <= now())::boolean AS due
FROM alert_groups
WHERE project_id = $1 AND kind = $2 AND closed_at IS NULL
FOR UPDATE;

-- name: InsertSingleGroup :one
-- A group of one alert, closed as it is made: it goes out at once, and the
-- one-open-group index (per project and kind) must not make two of them
-- wait for each other. channel_id (channel.test) is kept only when the
-- channel still exists in the project.
INSERT INTO alert_groups (id, project_id, kind, channel_id, send_at, closed_at, alert_count)
VALUES (
    sqlc.arg(id), sqlc.arg(project_id), sqlc.arg(kind),
    (SELECT c.id FROM notification_channels AS c
     WHERE c.id = sqlc.narg(channel_id)::uuid AND c.project_id = sqlc.arg(project_id)),
    now(), now(), 1
)
RETURNING channel_id;

-- name: JoinGroup :exec
UPDATE alerts SET group_id = sqlc.arg(group_id) WHERE id = sqlc.arg(id);

-- name: CountGroupAlert :exec
UPDATE alert_groups SET alert_count = alert_count + 1 WHERE id = $1;

-- name: ListWaitingAlerts :many
-- Alerts not taken in older_than_secs after they were written: their event
-- was lost or never published. Oldest first, bounded.
SELECT id, project_id, kind, body, occurred_at
FROM alerts
WHERE group_id IS NULL
  AND created_at < now() - make_interval(secs => sqlc.arg(older_than_secs)::float8)
ORDER BY created_at
LIMIT sqlc.arg(max_alerts);

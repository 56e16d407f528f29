-- Notification channels (internal/channel) and what the API shows of their
-- sends. Every query is scoped by project_id, so that another project's
-- channel id is simply not found. The config holds secrets (the chat URL's
-- token, the SMTP password): it is stored sealed (config_sealed), and the
-- channel package decides what is shown.

-- name: LockProjectChannels :one
-- Serialises the creations of one project's channels, so that two at once
-- cannot both pass the per-project limit. FOR NO KEY UPDATE leaves hooks
-- free to be inserted meanwhile.
SELECT id FROM projects WHERE id = @project_id FOR NO KEY UPDATE;

-- name: CountChannels :one
SELECT count(*) FROM notification_channels WHERE project_id = @project_id;

-- name: InsertChannel :one
INSERT INTO notification_channels (id, project_id, name, kind, config_sealed, events, enabled)
VALUES (@id, @project_id, @name, @kind, @config_sealed, @events::text[], @enabled)
RETURNING *;

-- name: ListChannels :many
-- Newest first (ids are UUIDv7, so the id breaks ties in creation order).
SELECT *
FROM notification_channels
WHERE project_id = @project_id
ORDER BY created_at DESC, id DESC
LIMIT @max_rows;

-- name: GetChannel :one
SELECT *
FROM notification_channels
WHERE project_id = @project_id AND id = @id;

-- name: LockChannel :one
-- The channel a change is merged into, locked until the change commits so
-- that two concurrent changes cannot undo each other.
SELECT *
FROM notification_channels
WHERE project_id = @project_id AND id = @id
FOR NO KEY UPDATE;

-- name: UpdateChannel :one
-- Writes the merged settings; the health columns are the notifier's.
UPDATE notification_channels
SET name       = @name,
    config_sealed = @config_sealed,
    events     = @events::text[],
    enabled    = @enabled,
    updated_at = now()
WHERE project_id = @project_id AND id = @id
RETURNING *;

-- name: DeleteChannel :execrows
DELETE FROM notification_channels WHERE project_id = @project_id AND id = @id;

-- name: ListChannelSendAttempts :many
-- A channel's recent tries, newest first, with the kind of alert each
-- carried.
SELECT a.group_id, g.kind, a.attempt, a.started_at, a.duration_seconds, a.outcome, a.error
FROM alert_send_attempts AS a
JOIN alert_groups AS g ON g.id = a.group_id
WHERE a.channel_id = @channel_id
ORDER BY a.started_at DESC, a.group_id, a.attempt DESC
LIMIT @max_rows;

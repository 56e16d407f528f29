-- Closing due alert groups: each becomes one send per target.

-- name: ClaimDueGroups :many
-- Groups whose time has come; a group an intake holds is skipped, and
-- taken at the next tick.
SELECT id, project_id, kind, channel_id, opened_at
FROM alert_groups
WHERE closed_at IS NULL AND send_at <= now()
ORDER BY send_at
LIMIT sqlc.arg(max_groups)
FOR UPDATE SKIP LOCKED;

-- name: CloseGroup :exec
UPDATE alert_groups SET closed_at = now() WHERE id = $1;

-- name: CreateChannelSends :execrows
-- One send per target channel: for channel.test the tested channel
-- (enabled or not), otherwise each enabled channel of the project that
-- receives the kind. The target is the channel's id.
INSERT INTO alert_sends (group_id, target, channel_id)
SELECT sqlc.arg(group_id), c.id::text, c.id
FROM notification_channels AS c
WHERE c.project_id = sqlc.arg(project_id)
  AND CASE
        WHEN sqlc.arg(kind)::text = 'channel.test' THEN c.id = sqlc.narg(channel_id)::uuid
        ELSE c.enabled AND sqlc.arg(kind)::text = ANY (c.events)
      END
ON CONFLICT (group_id, target) DO NOTHING;

-- name: CreateOwnersSend :execrows
-- The e-mail to the project's owner addresses (quota alerts), if it has any.
INSERT INTO alert_sends (group_id, target)
SELECT sqlc.arg(group_id), 'owners'
FROM projects AS p
WHERE p.id = sqlc.arg(project_id) AND cardinality(p.owner_emails) > 0
ON CONFLICT (group_id, target) DO NOTHING;

-- name: AdvanceFollowup :exec
-- A failure message goes out: the next may not go out before now +
-- followup_secs. The first starts at the project's minimum, and so does one
-- whose group opened after a quiet period (the maximum); else it doubles,
-- up to the maximum.
INSERT INTO alert_followups (project_id, last_sent_at, followup_secs)
SELECT p.id, now(), p.alert_followup_min_secs
FROM projects AS p
WHERE p.id = sqlc.arg(project_id)
ON CONFLICT (project_id) DO UPDATE SET
    last_sent_at = now(),
    followup_secs = (
        SELECT CASE
            WHEN sqlc.arg(opened_at)::timestamptz > alert_followups.last_sent_at + make_interval(secs => p.alert_followup_max_secs)
            THEN p.alert_followup_min_secs
            ELSE LEAST(GREATEST(alert_followups.followup_secs * 2, p.alert_followup_min_secs), p.alert_followup_max_secs)
        END
        FROM projects AS p
        WHERE p.id = alert_followups.project_id
    );

-- Sending: claiming due sends under a lease, loading what a message says,
-- recording every try.

-- name: ClaimSends :many
-- Claims due pending sends: the lease is next_try_at moved to the lease's
-- end, so that a notifier that dies mid-send leaves the row to be claimed
-- again. attempts identifies the claim when its result is recorded.
UPDATE alert_sends AS s
SET next_try_at = now() + make_interval(secs => sqlc.arg(lease_secs)::float8),
    lease_expires_at = now() + make_interval(secs => sqlc.arg(lease_secs)::float8),
    attempts = s.attempts + 1
FROM (
    SELECT d.group_id, d.target
    FROM alert_sends AS d
    WHERE d.state = 'pending' AND d.next_try_at <= now()
    ORDER BY d.next_try_at
    LIMIT sqlc.arg(max_sends)
    FOR UPDATE SKIP LOCKED
) AS due
WHERE s.group_id = due.group_id AND s.target = due.target
RETURNING s.group_id, s.target, s.channel_id, s.attempts;

-- name: GetGroupForSend :one
SELECT g.id, g.project_id, g.kind, g.alert_count, g.closed_at,
       p.name AS project_name, p.domain AS project_domain, p.owner_emails
FROM alert_groups AS g
JOIN projects AS p ON p.id = g.project_id
WHERE g.id = $1;

-- name: ListGroupAlerts :many
-- The first alerts of a group, the ones a message lists.
SELECT body
FROM alerts
WHERE group_id = sqlc.arg(group_id)
ORDER BY occurred_at, id
LIMIT sqlc.arg(max_alerts);

-- name: GetChannelForSend :one
SELECT kind, config_sealed FROM notification_channels WHERE id = $1;

-- name: ListSigningKeys :many
-- The project's usable signing keys: the active one first, then retiring
-- keys still inside their grace period, newest first.
SELECT id, secret_sealed
FROM signing_keys
WHERE project_id = $1
  AND (state = 'active' OR (state = 'retiring' AND expires_at > now()))
ORDER BY (state = 'active') DESC, expires_at DESC;

-- name: RecordSent :execrows
-- Only while the claim is this one's (attempts unchanged): a notifier whose
-- lease ran out and whose send another notifier took over records nothing.
UPDATE alert_sends
SET state = 'sent', sent_at = now(), lease_expires_at = NULL, last_error = NULL
WHERE group_id = sqlc.arg(group_id) AND target = sqlc.arg(target)
  AND attempts = sqlc.arg(attempts) AND state = 'pending';

-- name: RecordFailure :many
-- A failed try: retried after backoff_secs, or failed for good once the
-- send is older than give_up_secs. Same claim check as RecordSent.
UPDATE alert_sends
SET state = CASE WHEN now() - created_at > make_interval(secs => sqlc.arg(give_up_secs)::float8)
                 THEN 'failed' ELSE 'pending' END,
    next_try_at = now() + make_interval(secs => sqlc.arg(backoff_secs)::float8),
    lease_expires_at = NULL,
    last_error = sqlc.arg(last_error)
WHERE group_id = sqlc.arg(group_id) AND target = sqlc.arg(target)
  AND attempts = sqlc.arg(attempts) AND state = 'pending'
RETURNING state;

-- name: InsertSendAttempt :exec
INSERT INTO alert_send_attempts (group_id, target, attempt, channel_id, started_at, duration_seconds, outcome, error)
VALUES (sqlc.arg(group_id), sqlc.arg(target), sqlc.arg(attempt), sqlc.narg(channel_id), sqlc.arg(started_at),
        sqlc.arg(duration_seconds), sqlc.arg(outcome), sqlc.narg(error))
ON CONFLICT (group_id, target, attempt) DO NOTHING;

-- name: ChannelSucceeded :exec
UPDATE notification_channels
SET consecutive_failures = 0, last_success_at = now()
WHERE id = $1;

-- name: ChannelFailed :exec
UPDATE notification_channels
SET consecutive_failures = consecutive_failures + 1, last_failure_at = now(), last_error = sqlc.arg(last_error)
WHERE id = sqlc.arg(id);

-- name: MarkHooksNotified :execrows
-- The hooks of a failure group have been named in a message. The hook id is
-- the second part of a hook.failed alert's id (hook.failed:<hook>:<lease>).
UPDATE hooks
SET was_notified = true
WHERE id IN (
    SELECT CASE WHEN split_part(a.id, ':', 2) ~ '^[0-9a-fA-F-]{36}$' THEN split_part(a.id, ':', 2)::uuid END
    FROM alerts AS a
    WHERE a.group_id = sqlc.arg(group_id) AND a.kind = 'hook.failed'
) AND NOT was_notified;

-- name: LatestSigningKeySecret :one
-- The newest signing key's sealed secret: at start, the service checks
-- that its keyring opens what the database holds.
SELECT id, secret_sealed FROM signing_keys ORDER BY created_at DESC LIMIT 1;

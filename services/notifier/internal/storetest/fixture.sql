-- Test fixtures and read-backs: only tests use the queries named ...ForTest
-- (the gateway and the scheduler write these rows in production).

-- name: InsertProjectForTest :exec
-- The notifier never opens the async secret: a placeholder stands in for
-- the sealed value.
INSERT INTO projects (id, name, domain, alert_group_wait_secs, alert_followup_min_secs,
                      alert_followup_max_secs, owner_emails, async_secret_sealed)
VALUES (sqlc.arg(id), sqlc.arg(name), sqlc.arg(domain), sqlc.arg(group_wait_secs),
        sqlc.arg(followup_min_secs), sqlc.arg(followup_max_secs), sqlc.arg(owner_emails)::text[],
        'v1:test:unopened');

-- name: InsertChannelForTest :exec
-- The config is sealed, as the gateway stores it.
INSERT INTO notification_channels (id, project_id, name, kind, config_sealed, events, enabled)
VALUES (sqlc.arg(id), sqlc.arg(project_id), sqlc.arg(name), sqlc.arg(kind), sqlc.arg(config_sealed),
        sqlc.arg(events)::text[], sqlc.arg(enabled));

-- name: InsertFailedHookForTest :exec
INSERT INTO hooks (id, project_id, path, domain, data, post_at, status, attempts, failure_error)
VALUES (sqlc.arg(id), sqlc.arg(project_id), sqlc.arg(path), sqlc.arg(domain), '{}', now(), 'failed', 6, 'HTTP 500');

-- name: CountNotifiedHooksForTest :one
SELECT count(*) FILTER (WHERE was_notified) AS notified, count(*) AS total
FROM hooks WHERE project_id = $1;

-- name: ListGroupsForTest :many
SELECT * FROM alert_groups WHERE project_id = $1 ORDER BY opened_at, id;

-- name: ListProjectAlertsForTest :many
SELECT * FROM alerts WHERE project_id = $1 ORDER BY created_at, id;

-- name: ListSendsForTest :many
SELECT s.* FROM alert_sends AS s JOIN alert_groups AS g ON g.id = s.group_id
WHERE g.project_id = $1 ORDER BY s.created_at, s.target;

-- name: ListAttemptsForTest :many
SELECT a.* FROM alert_send_attempts AS a JOIN alert_groups AS g ON g.id = a.group_id
WHERE g.project_id = $1 ORDER BY a.started_at, a.attempt;

-- name: GetChannelForTest :one
SELECT * FROM notification_channels WHERE id = $1;

-- name: GetFollowupForTest :one
SELECT * FROM alert_followups WHERE project_id = $1;

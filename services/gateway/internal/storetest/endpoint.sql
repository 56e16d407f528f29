-- Test fixtures beside store/endpoint.sql: only tests use them.

-- name: PauseEndpointForTest :exec
-- What the scheduler writes when a domain's breaker opens.
INSERT INTO endpoint_breakers (project_id, domain, consecutive_failures, failing_since, last_error,
    paused_at, paused_until, pause_cause, pause_reason, cooldown_secs, held_until, alerted)
VALUES (sqlc.arg(project_id), sqlc.arg(domain), 10, now() - interval '10 seconds', 'HTTP 503',
    now(), now() + interval '30 seconds', 'failures', sqlc.arg(reason), 30, now() + interval '30 seconds', true);

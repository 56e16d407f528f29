-- Endpoints and their circuit breakers (migration 00012, docs/security.md
-- "Circuit breaker and Retry-After"). The scheduler writes the breakers'
-- state; the gateway only reads it and records resume requests.

-- name: ListEndpoints :many
SELECT domain, consecutive_failures, last_error, paused_at, paused_until, pause_cause, pause_reason,
    probe_hook_id, resume_requested
FROM endpoint_breakers
WHERE project_id = sqlc.arg(project_id)
ORDER BY domain
LIMIT 1000;

-- name: RequestEndpointResume :one
-- Records a resume request for the scheduler to apply (it clears the flag).
UPDATE endpoint_breakers
SET resume_requested = true
WHERE project_id = sqlc.arg(project_id) AND domain = sqlc.arg(domain)
RETURNING domain, consecutive_failures, last_error, paused_at, paused_until, pause_cause, pause_reason,
    probe_hook_id, resume_requested;

-- Test fixtures and read-backs beside store/breaker.sql: only tests use
-- them.

-- name: GetBreakerForTest :one
SELECT * FROM endpoint_breakers WHERE project_id = sqlc.arg(project_id) AND domain = sqlc.arg(domain);

-- name: EndPauseForTest :execrows
-- Ends a pause's wait now, so a test need not wait its cooldown.
UPDATE endpoint_breakers SET paused_until = now()
WHERE project_id = sqlc.arg(project_id) AND domain = sqlc.arg(domain) AND paused_at IS NOT NULL;

-- name: RequestResumeForTest :execrows
-- What POST /v1/endpoints/resume does.
UPDATE endpoint_breakers SET resume_requested = true
WHERE project_id = sqlc.arg(project_id) AND domain = sqlc.arg(domain);

-- name: RunNowForTest :execrows
-- Brings a waiting hook's run_at to now, as if its wait had passed.
UPDATE hooks SET run_at = now() WHERE id = sqlc.arg(id) AND status IN ('pending', 'retry');

-- name: SetFailurePolicyForTest :execrows
-- What PATCH /v1/project with failurePolicy stores.
UPDATE projects SET failure_policy = sqlc.arg(failure_policy)::jsonb WHERE id = sqlc.arg(id);

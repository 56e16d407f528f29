-- Test fixtures and read-backs beside store/recovery.sql: only tests and
-- benchmarks use them.

-- name: MarkEndpointFailingForTest :one
-- Test fixture: the endpoint is failing, as the scheduler marks it when a
-- hook to it runs out of retries.
INSERT INTO failing_endpoints (project_id, domain, path, failing_since, failed_hooks)
VALUES (@project_id, @domain, @path, now(), @failed_hooks)
RETURNING failing_since;

-- name: ListFailingEndpointsForTest :many
-- Test fixture: a project's failing endpoints.
SELECT * FROM failing_endpoints WHERE project_id = @project_id ORDER BY domain, path;

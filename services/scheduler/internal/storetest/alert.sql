-- Test fixtures and read-backs beside store/alert.sql: only tests and
-- benchmarks use them.

-- name: ListAlertsForTest :many
SELECT * FROM alerts WHERE project_id = sqlc.arg(project_id) ORDER BY created_at, id;

-- name: ListFailingEndpointsForTest :many
SELECT * FROM failing_endpoints WHERE project_id = sqlc.arg(project_id) ORDER BY domain, path;

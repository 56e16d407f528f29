-- Test read-backs of the hooks table: only tests use them.

-- name: CountHooksForTest :one
-- How many hooks the project has.
SELECT count(*) FROM hooks WHERE project_id = @project_id;

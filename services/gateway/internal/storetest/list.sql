-- Test fixtures and read-backs beside store/list.sql: only tests and
-- benchmarks use them.

-- name: CopyHooksForTest :copyfrom
-- Loads many hooks at once (COPY) for tests and benchmarks of the listing.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, status, run_at, created_at, updated_at)
VALUES (@id, @project_id, @path, @domain, @data, @post_at, @status, @run_at, @created_at, @updated_at);

-- name: VacuumHooksForTest :exec
-- After a bulk load: fresh statistics for the planner, and a visibility map
-- that lets counts read only the index, as autovacuum would do in a while.
VACUUM (ANALYZE) hooks;

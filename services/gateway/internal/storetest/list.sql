-- Test fixtures and read-backs beside store/list.sql: only tests and
-- benchmarks use them.

-- name: CopyHooksForTest :copyfrom
-- Loads many hooks at once (COPY) for tests and benchmarks of the listing.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, status, run_at, created_at, updated_at, tags)
VALUES (@id, @project_id, @path, @domain, @data, @post_at, @status, @run_at, @created_at, @updated_at, @tags);

-- name: VacuumHooksForTest :exec
-- After a bulk load: fresh statistics for the planner, and a visibility map
-- that lets counts read only the index, as autovacuum would do in a while.
VACUUM (ANALYZE) hooks;

-- name: TagHooksForTest :exec
-- Tags every hook of the project common, and one in a hundred (those due
-- on a whole hundred seconds) rare as well, for the tests of listing by tag.
UPDATE hooks
SET tags = CASE WHEN extract(epoch FROM post_at)::bigint % 100 = 0 THEN '{common,rare}'::text[] ELSE '{common}'::text[] END
WHERE project_id = @project_id;

-- Test fixtures and read-backs beside store/list.sql: only tests and
-- benchmarks use them.

-- name: CopyHooksForTest :copyfrom
-- Loads many hooks at once (COPY) for tests and benchmarks of the listing.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, status, run_at, created_at, updated_at, tags, ordering_key)
VALUES (@id, @project_id, @path, @domain, @data, @post_at, @status, @run_at, @created_at, @updated_at, @tags, @ordering_key);

-- name: VacuumHooksForTest :exec
-- After a bulk load: fresh statistics for the planner, and a visibility map
-- that lets counts read only the index, as autovacuum would do in a while.
VACUUM (ANALYZE) hooks;

-- name: KeyHooksForTest :exec
-- Gives one hook in a hundred of the project (those due on a whole hundred
-- seconds) the ordering key 'sparse', for the tests of listing by key.
UPDATE hooks
SET ordering_key = 'sparse'
WHERE project_id = @project_id AND extract(epoch FROM post_at)::bigint % 100 = 0;

-- name: TagHooksForTest :exec
-- Tags every hook of the project common, and one in a hundred (those due
-- on a whole hundred seconds) rare as well, for the tests of listing by tag.
UPDATE hooks
SET tags = CASE WHEN extract(epoch FROM post_at)::bigint % 100 = 0 THEN '{common,rare}'::text[] ELSE '{common}'::text[] END
WHERE project_id = @project_id;

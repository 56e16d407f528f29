-- Test read-backs of the hooks table: only tests use them.

-- name: CountHooksForTest :one
-- How many hooks the project has.
SELECT count(*) FROM hooks WHERE project_id = @project_id;

-- name: RefusePathForTest :exec
-- A fault in the middle of a write, for the tests of all-or-nothing
-- creates: from now on PostgreSQL refuses to store a hook whose path is
-- /refused (NOT VALID: the rows already there are not checked).
ALTER TABLE hooks ADD CONSTRAINT hooks_refused_path_for_test CHECK (path <> '/refused') NOT VALID;

-- name: FinishHookForTest :exec
-- What a scheduler does when a hook's attempt ends (tests only): the hook
-- is completed or failed, or waits an hour for its retry, with its attempt
-- counted.
UPDATE hooks
SET status = @status::text, attempts = attempts + 1, lease_expires_at = NULL,
    run_at = CASE WHEN @status::text = 'retry' THEN now() + interval '1 hour' END
WHERE id = @id;

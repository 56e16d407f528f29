-- Ordering keys as the scheduler leaves them (migration 00036), for the
-- tests of the API's ordering keys: only tests use them.

-- name: HoldOrderingKeyForTest :exec
-- What the scheduler does when a keyed hook, its key's head, fails for
-- good: the hook is failed with its attempt counted and no run_at, and its
-- key's row names it. Under the project's ordering_on_failure 'hold' the
-- key is then held; the finished trigger wakes nothing.
WITH failed AS (
    UPDATE hooks
    SET status = 'failed', run_at = NULL, lease_expires_at = NULL, attempts = attempts + 1,
        failure_error = 'HTTP 503', failure_class = '5xx', try_at = now(), updated_at = now()
    WHERE id = @id AND ordering_key IS NOT NULL
    RETURNING project_id, ordering_key, id
)
INSERT INTO ordering_keys (project_id, key, active_hook_id, updated_at)
SELECT failed.project_id, failed.ordering_key, failed.id, clock_timestamp() FROM failed
ON CONFLICT (project_id, key) DO UPDATE
SET active_hook_id = EXCLUDED.active_hook_id, updated_at = EXCLUDED.updated_at;

-- name: DeferHookForTest :exec
-- What the scheduler's claim does to a keyed hook behind its key's head:
-- its run_at moves ahead, until the head's end wakes it.
UPDATE hooks SET run_at = now() + interval '1 hour' WHERE id = @id AND run_at IS NOT NULL;

-- name: GetOrderingKeyForTest :one
-- A key's row as it is stored.
SELECT * FROM ordering_keys WHERE project_id = @project_id AND key = @ordering_key::text;

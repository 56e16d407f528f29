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

-- name: TakeOrderingKeyForTest :exec
-- What the scheduler's claim does when it takes a key for a hook: the
-- key's row names the hook as its head.
INSERT INTO ordering_keys (project_id, key, active_hook_id, updated_at)
SELECT project_id, ordering_key, id, clock_timestamp() FROM hooks WHERE id = @id AND ordering_key IS NOT NULL
ON CONFLICT (project_id, key) DO UPDATE
SET active_hook_id = EXCLUDED.active_hook_id, updated_at = EXCLUDED.updated_at;

-- name: DeferHookForTest :exec
-- What the scheduler's claim does to a keyed hook behind its key's head:
-- its run_at moves ahead, until the head's end wakes it.
UPDATE hooks SET run_at = now() + interval '1 hour' WHERE id = @id AND run_at IS NOT NULL;

-- name: GetOrderingKeyForTest :one
-- A key's row as it is stored.
SELECT * FROM ordering_keys WHERE project_id = @project_id AND key = @ordering_key::text;

-- name: HoldEveryOrderingKeyForTest :execrows
-- HoldOrderingKeyForTest for the first unfinished hook of each of the
-- project's keys, and DeferHookForTest for the keys' other hooks, in one
-- statement: many held keys at once. The project must hold its keys
-- already, so that the finished trigger wakes nothing.
WITH firsts AS MATERIALIZED (
    SELECT DISTINCT ON (f.ordering_key) f.id
    FROM hooks AS f
    WHERE f.project_id = @project_id AND f.ordering_key IS NOT NULL AND f.run_at IS NOT NULL
    ORDER BY f.ordering_key, f.post_at, f.created_at, f.id
), deferred AS (
    UPDATE hooks AS d SET run_at = now() + interval '1 hour'
    WHERE d.project_id = @project_id AND d.ordering_key IS NOT NULL AND d.run_at IS NOT NULL
      AND d.id NOT IN (SELECT firsts.id FROM firsts)
), failed AS (
    UPDATE hooks AS h
    SET status = 'failed', run_at = NULL, lease_expires_at = NULL, attempts = h.attempts + 1,
        failure_error = 'HTTP 503', failure_class = '5xx', try_at = now(), updated_at = now()
    WHERE h.id IN (SELECT firsts.id FROM firsts)
    RETURNING h.project_id, h.ordering_key, h.id
)
INSERT INTO ordering_keys (project_id, key, active_hook_id, updated_at)
SELECT failed.project_id, failed.ordering_key, failed.id, clock_timestamp() FROM failed
ON CONFLICT (project_id, key) DO UPDATE
SET active_hook_id = EXCLUDED.active_hook_id, updated_at = EXCLUDED.updated_at;

-- name: OrderingKeysStateForTest :one
-- The project's keys that have a head, and its keyed hooks due now and
-- waiting, by the database clock.
SELECT
    (SELECT count(*) FROM ordering_keys AS k WHERE k.project_id = @project_id AND k.active_hook_id IS NOT NULL)::bigint AS with_head,
    (SELECT count(*) FROM hooks AS h WHERE h.project_id = @project_id AND h.ordering_key IS NOT NULL AND h.run_at <= now())::bigint AS due,
    (SELECT count(*) FROM hooks AS h WHERE h.project_id = @project_id AND h.ordering_key IS NOT NULL AND h.run_at > now())::bigint AS waiting;

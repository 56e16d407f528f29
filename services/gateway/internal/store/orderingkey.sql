-- Ordering keys (internal/orderingkey; migration 00036): a key's state as
-- the API shows it, the project's held keys, and a resume.
--
-- A key's head is the hook its ordering_keys row names while that hook
-- holds the key: unfinished (pending, which includes waiting for an async
-- answer, or retry), or failed under the project's ordering_on_failure
-- 'hold', which makes the key held. A head that completed, failed under
-- 'continue', or was deleted no longer holds the key: the key has no head
-- then. The held keys are the view held_ordering_keys (migration 00040),
-- which says it as the scheduler's claim does (ClaimHooks), so that what
-- the API shows is what the claim does.
--
-- A key's unfinished hooks are counted from hooks_ordering_idx (those with
-- a run_at) and its head: a hook waiting for an async answer is pending
-- with no run_at, and only the key's head can be waiting.

-- name: GetOrderingKey :one
-- The key's state: whether it has a row, its head if any, whether it is
-- held, and its unfinished hooks. The project's row is the one row the
-- key's are joined to, so that a key with neither a row nor hooks still
-- answers (known false, no unfinished hooks).
SELECT (k.key IS NOT NULL)::boolean AS known,
       h.id AS head_hook_id,
       COALESCE(h.status = 'failed', false)::boolean AS held,
       ((SELECT count(*) FROM hooks AS u
         WHERE u.project_id = p.id AND u.ordering_key = @ordering_key::text AND u.run_at IS NOT NULL)
        + CASE WHEN h.status = 'pending' AND h.run_at IS NULL THEN 1 ELSE 0 END)::bigint AS unfinished
FROM projects AS p
LEFT JOIN ordering_keys AS k ON k.project_id = p.id AND k.key = @ordering_key::text
LEFT JOIN hooks AS h ON h.id = k.active_hook_id AND h.project_id = p.id
    AND (h.status IN ('pending', 'retry') OR (h.status = 'failed' AND p.ordering_on_failure = 'hold'))
WHERE p.id = @project_id;

-- name: ListHeldOrderingKeys :many
-- The project's held keys (held_ordering_keys, migration 00040) in key
-- order, strictly after after_key (the first page passes the empty string,
-- which no key is), with their head and their unfinished hooks (a held head
-- is finished, so only those with a run_at). A project that does not hold
-- its keys has none.
SELECT k.key, k.active_hook_id::uuid AS head_hook_id,
       (SELECT count(*) FROM hooks AS u
        WHERE u.project_id = k.project_id AND u.ordering_key = k.key AND u.run_at IS NOT NULL)::bigint AS unfinished
FROM held_ordering_keys AS k
WHERE k.project_id = @project_id
  AND k.key > @after_key::text
ORDER BY k.key
LIMIT @max_rows::integer;

-- name: CountHeldOrderingKeys :one
-- The project's held keys, counted up to max_count.
SELECT count(*) FROM (
    SELECT 1 FROM held_ordering_keys AS k
    WHERE k.project_id = @project_id
    LIMIT @max_count::integer
) AS capped;

-- name: WakeOrderingKey :exec
-- A resume's first step: the key's next unfinished hook is due now (or at
-- its postAt, if later). It locks that hook's row before ReleaseHeldOrderingKey
-- locks the key's: hooks, then keys, the order of the scheduler's claim, so
-- that a resume and a claim wait for each other instead of deadlocking.
SELECT sundial_wake_ordering_key(@project_id::uuid, @ordering_key::text);

-- name: ReleaseHeldOrderingKey :execrows
-- A resume's second step: a held key gets no head, which frees it for its
-- next hook. Nothing changes, and no row is counted, when the key is not
-- held (no row, or a head that does not hold it): the resume then rolls
-- back its wake. held is the key as this statement's snapshot sees it; a
-- key row changed since (a claim took the key again, for its head retried
-- in bulk: a new updated_at) fails the recheck of its newest version and
-- is left as it is, where a test of the head's status alone would still
-- read the snapshot's "failed" and free a key whose head is leased.
WITH held AS MATERIALIZED (
    SELECT k.updated_at FROM held_ordering_keys AS k
    WHERE k.project_id = @project_id AND k.key = @ordering_key::text
)
UPDATE ordering_keys AS k
SET active_hook_id = NULL, updated_at = clock_timestamp()
FROM held
WHERE k.project_id = @project_id
  AND k.key = @ordering_key::text
  AND k.updated_at = held.updated_at;

-- name: WakeHeldOrderingKeys :execrows
-- A project's change from 'hold' to 'continue', first step: what
-- WakeOrderingKey does for one key, for every key the project holds, in
-- one statement, and the number of keys. The wakes run in key order (the
-- function is volatile, so it is called on the sorted rows), each locking
-- its key's next hook: hooks before keys, and keys in order, as the
-- scheduler's claim takes them, so that this and a claim wait for each
-- other instead of deadlocking.
SELECT sundial_wake_ordering_key(k.project_id, k.key)
FROM held_ordering_keys AS k
WHERE k.project_id = @project_id
ORDER BY k.key;

-- name: ReleaseHeldOrderingKeys :execrows
-- The change's second step: every key the project holds gets no head,
-- as ReleaseHeldOrderingKey does for one, and the number released. The key
-- rows are locked in key order (locked), the claim's order. A row whose
-- head changed since this statement's snapshot (a claim took the key again
-- for its retried hook: a new updated_at) fails the recheck of its
-- locked version and is left as it is.
WITH seen AS MATERIALIZED (
    SELECT k.key, k.active_hook_id, k.updated_at FROM held_ordering_keys AS k
    WHERE k.project_id = @project_id
), locked AS MATERIALIZED (
    SELECT k.key
    FROM ordering_keys AS k
    JOIN seen ON seen.key = k.key
    WHERE k.project_id = @project_id
      AND k.active_hook_id = seen.active_hook_id
      AND k.updated_at = seen.updated_at
    ORDER BY k.key
    FOR UPDATE OF k
)
UPDATE ordering_keys AS k
SET active_hook_id = NULL, updated_at = clock_timestamp()
FROM locked
WHERE k.project_id = @project_id AND k.key = locked.key;

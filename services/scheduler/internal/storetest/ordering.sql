-- Fixtures and read-backs of ordering keys (migration 00036): only tests
-- use them.

-- name: SetOrderingOnFailureForTest :execrows
-- What PATCH /v1/project with orderingOnFailure stores.
UPDATE projects SET ordering_on_failure = sqlc.arg(ordering_on_failure) WHERE id = sqlc.arg(id);

-- name: GetOrderingKeyHeadForTest :one
-- The key's head as the claim left it (NULL: none, or no key row).
SELECT (SELECT k.active_hook_id FROM ordering_keys AS k
        WHERE k.project_id = sqlc.arg(project_id) AND k.key = sqlc.arg(ordering_key))::uuid AS head;

-- name: ResumeOrderingKeyForTest :exec
-- What POST /v1/ordering-keys/{key}/resume does, in its order: the next
-- hook woken, then the key freed.
WITH woken AS (
    SELECT sundial_wake_ordering_key(sqlc.arg(project_id), sqlc.arg(ordering_key))
)
UPDATE ordering_keys SET active_hook_id = NULL, updated_at = clock_timestamp()
WHERE project_id = sqlc.arg(project_id) AND key = sqlc.arg(ordering_key)
  AND EXISTS (SELECT 1 FROM woken);

-- name: LockHookForTest :exec
-- Holds the hook's row, as a claim running at the same time does, until
-- the caller's transaction ends.
SELECT id FROM hooks WHERE id = sqlc.arg(id) FOR UPDATE;

-- name: InsertOrderingKeyForTest :exec
-- A key row as a claim leaves it, last taken age_seconds ago.
INSERT INTO ordering_keys (project_id, key, active_hook_id, updated_at)
VALUES (sqlc.arg(project_id), sqlc.arg(ordering_key), sqlc.narg(head),
    now() - make_interval(secs => sqlc.arg(age_seconds)::float8));

-- name: ListOrderingKeysForTest :many
SELECT key FROM ordering_keys WHERE project_id = sqlc.arg(project_id) ORDER BY key;

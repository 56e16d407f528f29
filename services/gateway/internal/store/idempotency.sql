-- Idempotency-Key of POST /v1/hooks and POST /v1/hooks/batch
-- (internal/idempotency). A key names the hooks of one request for a time to
-- live (24 hours); after it, the key may name new ones.

-- name: ClaimIdempotencyKey :one
-- Takes the key for a hook about to be created: a new key, or one whose time
-- to live has passed. No row comes back when the key is held by a live
-- request. A concurrent transaction claiming the same key waits here until
-- this one ends: after a commit it finds the key held (and reads it), after
-- a rollback it takes the key itself. On a conflict the row is locked even
-- when it is not updated, so the read that follows sees it.
-- hook_ids are the request's hooks in order (text: see InsertHooks), the
-- first of which is hook_id (idempotency.Claim).
INSERT INTO idempotency_keys (project_id, key, request_hash, hook_id, hook_ids)
VALUES (@project_id, @key, @request_hash, @hook_id, CAST(@hook_ids::text[] AS uuid[]))
ON CONFLICT (project_id, key) DO UPDATE
SET request_hash = EXCLUDED.request_hash,
    hook_id = EXCLUDED.hook_id,
    hook_ids = EXCLUDED.hook_ids,
    created_at = now()
WHERE idempotency_keys.created_at <= now() - make_interval(secs => @ttl_seconds::double precision)
RETURNING hook_id;

-- name: GetIdempotencyKey :one
-- A key claimed before hook_ids existed names its one hook.
SELECT request_hash, COALESCE(hook_ids, ARRAY[hook_id])::text[] AS hook_ids, created_at
FROM idempotency_keys
WHERE project_id = @project_id AND key = @key;

-- name: DeleteExpiredIdempotencyKeys :execrows
-- Removes up to max_keys keys past their time to live, oldest first.
-- Expired keys are harmless (a claim takes them over); this only keeps the
-- table small. SKIP LOCKED lets several gateways sweep at once.
DELETE FROM idempotency_keys AS k
USING (
    SELECT project_id, key
    FROM idempotency_keys
    WHERE created_at <= now() - make_interval(secs => @ttl_seconds::double precision)
    ORDER BY created_at
    LIMIT @max_keys::integer
    FOR UPDATE SKIP LOCKED
) AS expired
WHERE k.project_id = expired.project_id AND k.key = expired.key;

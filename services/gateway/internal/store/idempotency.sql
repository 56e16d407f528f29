-- Idempotency-Key of POST /v1/hooks (internal/idempotency). A key names one
-- hook for a time to live (24 hours); after it, the key may name a new one.

-- name: ClaimIdempotencyKey :one
-- Takes the key for a hook about to be created: a new key, or one whose time
-- to live has passed. No row comes back when the key is held by a live
-- request. A concurrent transaction claiming the same key waits here until
-- this one ends: after a commit it finds the key held (and reads it), after
-- a rollback it takes the key itself. On a conflict the row is locked even
-- when it is not updated, so the read that follows sees it.
INSERT INTO idempotency_keys (project_id, key, request_hash, hook_id)
VALUES (@project_id, @key, @request_hash, @hook_id)
ON CONFLICT (project_id, key) DO UPDATE
SET request_hash = EXCLUDED.request_hash,
    hook_id = EXCLUDED.hook_id,
    created_at = now()
WHERE idempotency_keys.created_at <= now() - make_interval(secs => @ttl_seconds::double precision)
RETURNING hook_id;

-- name: GetIdempotencyKey :one
SELECT request_hash, hook_id, created_at
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

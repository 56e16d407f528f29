-- Test fixtures and read-backs beside store/async.sql: only tests and
-- benchmarks use them.

-- name: LeaseHookForTest :one
-- What a scheduler's claim does (tests only; the scheduler claims in
-- production): the hook is in flight under a new lease.
UPDATE hooks
SET lease_seq = lease_seq + 1, lease_expires_at = now() + interval '30 seconds',
    run_at = now() + interval '30 seconds', status = 'pending'
WHERE id = @id
RETURNING lease_seq;

-- name: ExpireWaitForTest :execrows
-- Moves a waiting hook's deadline into the past (tests only).
WITH hook AS (
    UPDATE hooks AS h SET async_deadline = now() - interval '1 second'
    WHERE h.id = @id AND h.async_deadline IS NOT NULL
    RETURNING h.id, h.lease_seq
)
UPDATE hook_attempts AS a SET async_deadline = now() - interval '1 second'
FROM hook
WHERE a.hook_id = hook.id AND a.lease_seq = hook.lease_seq AND a.async_state = 'waiting';

-- name: AttemptsForTest :many
SELECT * FROM hook_attempts WHERE hook_id = @hook_id ORDER BY attempt;

-- name: AsyncSecretForTest :one
SELECT async_secret FROM projects WHERE id = @id;

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

-- name: StartWaitForTest :exec
-- What a scheduler does when it applies a 202 to the hook in flight (tests
-- only): the hook waits, with its attempt recorded as waiting.
WITH waiting AS (
    UPDATE hooks AS h
    SET attempts         = h.attempts + 1,
        try_at           = now(),
        post_duration_seconds = 0,
        run_at           = NULL,
        lease_expires_at = NULL,
        async_deadline   = now() + make_interval(secs => @timeout_seconds::integer),
        updated_at       = now()
    WHERE h.id = @hook_id
    RETURNING h.id, h.attempts, h.lease_seq, h.async_deadline
)
INSERT INTO hook_attempts (
    hook_id, attempt, lease_seq, started_at, duration_seconds, outcome, status_code,
    async_state, async_deadline, async_timeout_secs
)
SELECT w.id, w.attempts, w.lease_seq, now(), 0, 'async', 202, 'waiting', w.async_deadline, @timeout_seconds::integer
FROM waiting AS w;

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
SELECT async_secret_sealed FROM projects WHERE id = @id;

-- name: ListenAsyncForTest :exec
-- Subscribes the connection to what wakes the schedulers (tests only).
LISTEN sundial_async;

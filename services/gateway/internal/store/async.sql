-- Async hooks (migration 00007): the receiver's POST to a delivery's ack or
-- nack URL. Every answer runs in one transaction that first locks the hook,
-- as the scheduler does before applying a result, so the two never
-- interleave.

-- name: AsyncSecretOfHook :one
-- The async secret of the project of the hook an ack or nack URL names: the
-- URL's token is checked against it before anything is locked, so a wrong
-- token costs one read and holds up no one.
SELECT p.async_secret
FROM hooks AS h
JOIN projects AS p ON p.id = h.project_id
WHERE h.id = @id;

-- name: LockHookForAnswer :one
-- The hook an ack or nack URL names, locked, with its project's async timeout.
SELECT h.id, h.status, h.lease_seq, h.lease_expires_at, p.async_timeout_secs
FROM hooks AS h
JOIN projects AS p ON p.id = h.project_id
WHERE h.id = @id
FOR UPDATE OF h;

-- name: AttemptOfLease :one
-- The attempt recorded for the hook's delivery under the given lease, with
-- whether its async wait has ended by the database clock.
SELECT a.attempt, a.outcome, a.async_state,
    (a.async_deadline IS NOT NULL AND a.async_deadline <= now())::boolean AS wait_ended
FROM hook_attempts AS a
WHERE a.hook_id = @hook_id AND a.lease_seq = @lease_seq
ORDER BY a.attempt DESC
LIMIT 1;

-- name: StartWaitBeforeResult :one
-- An answer came before the scheduler applied the delivery's 202 (the
-- receiver called the URL before it answered, or the result is still on its
-- way): the hook is put in the waiting state the 202 would have put it in,
-- with this attempt recorded, so the answer applies as usual. The delivery's
-- own result is then stale (the lease has ended) and changes nothing; the
-- attempt's duration and response excerpt are unknown and left empty.
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
FROM waiting AS w
RETURNING attempt;

-- name: AckAttempt :exec
-- The receiver acknowledged the attempt: it succeeded, and the body it sent
-- is kept with it.
UPDATE hook_attempts
SET outcome = 'success', async_state = 'acked', ack_body = sqlc.narg(body)::jsonb
WHERE hook_id = @hook_id AND attempt = @attempt;

-- name: CompleteAckedHook :one
-- The acknowledged attempt completes the hook (tryAt keeps the attempt's
-- time).
UPDATE hooks
SET status           = 'completed',
    failure_error    = NULL,
    run_at           = NULL,
    lease_expires_at = NULL,
    async_deadline   = NULL,
    updated_at       = now()
WHERE id = @id
RETURNING status;

-- name: NackAttempt :exec
-- The receiver nacked the attempt: its wait ends now, and a scheduler's
-- sweep applies it as a failed attempt (retry or fail) within a moment. The
-- body it sent is kept with it.
UPDATE hook_attempts
SET async_state = 'nacked', async_deadline = now(), ack_body = sqlc.narg(body)::jsonb
WHERE hook_id = @hook_id AND attempt = @attempt;

-- name: EndWaitNow :exec
UPDATE hooks SET async_deadline = now(), updated_at = now() WHERE id = @id;

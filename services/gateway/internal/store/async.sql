-- Async hooks (migrations 00007 and 00010): the receiver's POST to a
-- delivery's ack or nack URL. The gateway only records the answer on its
-- attempt, with answer_pending set (whose trigger sends NOTIFY
-- sundial_async); the scheduler, the one writer of hook state, applies it.
-- Every answer runs in one transaction that first locks the hook, as the
-- scheduler does before applying a result, so the two never interleave.

-- name: AsyncSecretOfHook :one
-- The async secret of the project of the hook an ack or nack URL names: the
-- URL's token is checked against it before anything is locked, so a wrong
-- token costs one read and holds up no one. It is sealed (package
-- secretbox).
SELECT p.id AS project_id, p.async_secret_sealed
FROM hooks AS h
JOIN projects AS p ON p.id = h.project_id
WHERE h.id = @id;

-- name: LockHookForAnswer :one
-- The hook an ack or nack URL names, locked, with its project's async timeout.
SELECT h.id, h.status, h.attempts, h.lease_seq, h.lease_expires_at, p.async_timeout_secs
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

-- name: RecordAnswerBeforeResult :one
-- An answer came before the scheduler applied the delivery's 202 (the
-- receiver called the URL before it answered, or the result is still on its
-- way): the attempt in flight (the hook's attempts + 1) is recorded with
-- the answer, as the 202 would have recorded it, waiting for a scheduler to
-- apply it; the hook itself is the scheduler's to change. The attempt's
-- duration, response excerpt and headers are unknown here and left empty
-- until the 202's result brings them (the scheduler's
-- CompleteAnsweredAttempt); a nack ends its wait now.
INSERT INTO hook_attempts (
    hook_id, attempt, lease_seq, started_at, duration_seconds, outcome, status_code,
    async_state, async_deadline, async_timeout_secs, ack_body, answer_pending
)
SELECT h.id, h.attempts + 1, @lease_seq, now(), 0, 'async', 202, @state::text,
    CASE WHEN @state::text = 'nacked' THEN now()
         ELSE now() + make_interval(secs => @timeout_seconds::integer) END,
    @timeout_seconds::integer, sqlc.narg(body)::jsonb, true
FROM hooks AS h
WHERE h.id = @hook_id
-- Keeps the hook from being deleted until the attempt is in (attempts go
-- with their hook by migration 00026's trigger, which must see it).
FOR KEY SHARE OF h
RETURNING attempt;

-- name: AckAttempt :exec
-- The receiver acknowledged the attempt: the answer and the body it sent
-- are kept with it, and a scheduler completes the hook at once (woken by
-- answer_pending's notification).
UPDATE hook_attempts
SET async_state = 'acked', ack_body = sqlc.narg(body)::jsonb, answer_pending = true
WHERE hook_id = @hook_id AND attempt = @attempt;

-- name: NackAttempt :exec
-- The receiver nacked the attempt: its wait ends now, the body it sent is
-- kept with it, and a scheduler applies it as a failed attempt (retry or
-- fail) at once.
UPDATE hook_attempts
SET async_state = 'nacked', async_deadline = now(), ack_body = sqlc.narg(body)::jsonb, answer_pending = true
WHERE hook_id = @hook_id AND attempt = @attempt;

-- Async hooks (migration 00007): a delivery answered 202 waits for the
-- receiver's ack or nack, or for its timeout.

-- name: StartAsyncWait :one
-- The hook's current attempt was answered 202: the hook stays pending with no
-- run_at (no claim re-drives it) until async_deadline, now plus the 202's
-- Sundial-Async-Timeout when it gave one (1 to 86400 s) or else the project's
-- async_timeout_secs. lease_expires_at is cleared, so any further result of
-- this lease is stale. The attempt counts from now on (attempts, tryAt).
UPDATE hooks AS h
SET attempts              = sqlc.arg(attempts),
    post_duration_seconds = sqlc.arg(post_duration_seconds),
    try_at                = sqlc.arg(started_at)::timestamptz,
    run_at                = NULL,
    lease_expires_at      = NULL,
    async_deadline        = now() + make_interval(secs => (
        CASE WHEN sqlc.arg(asked_seconds)::integer BETWEEN 1 AND 86400
             THEN sqlc.arg(asked_seconds)::integer
             ELSE p.async_timeout_secs END)::float8),
    updated_at            = now()
FROM projects AS p
WHERE h.id = sqlc.arg(id) AND p.id = h.project_id
RETURNING h.async_deadline::timestamptz AS async_deadline,
    (CASE WHEN sqlc.arg(asked_seconds)::integer BETWEEN 1 AND 86400
          THEN sqlc.arg(asked_seconds)::integer
          ELSE p.async_timeout_secs END)::integer AS timeout_seconds;

-- name: InsertAsyncAttempt :execrows
-- Records the attempt answered 202 as waiting. The key (hook_id, attempt)
-- makes a repeat a no-op; an ack that came before the 202 was applied has
-- written the row already (and then this result is stale anyway).
INSERT INTO hook_attempts (
    hook_id, attempt, lease_seq, started_at, duration_seconds, outcome, status_code, response_excerpt,
    async_state, async_deadline, async_timeout_secs
) VALUES (
    sqlc.arg(hook_id), sqlc.arg(attempt), sqlc.arg(lease_seq), sqlc.arg(started_at),
    sqlc.arg(duration_seconds), 'async', sqlc.narg(status_code), sqlc.narg(response_excerpt),
    'waiting', sqlc.arg(async_deadline), sqlc.arg(async_timeout_secs)
)
ON CONFLICT DO NOTHING;

-- name: EndedAsyncWaits :many
-- Hooks whose async wait has ended (timed out, or nacked, which moves the
-- deadline to the nack's time) by the database clock, oldest first: an
-- indexed range read of hooks_async_deadline_idx. Each is then settled in
-- its own transaction under LockEndedAsyncWait.
SELECT h.id
FROM hooks AS h
WHERE h.async_deadline IS NOT NULL AND h.async_deadline <= now()
ORDER BY h.async_deadline
LIMIT sqlc.arg(max_hooks)::integer;

-- name: LockEndedAsyncWait :one
-- Locks a hook whose async wait has ended, with what settling its attempt
-- needs: its retry settings and the attempt of its lease. SKIP LOCKED: a
-- hook another scheduler (or an ack) holds is left to it; no row means there
-- is nothing to do (settled, acked, or not ended after all).
SELECT h.id, h.project_id, h.domain, h.path, h.lease_seq, h.retry_budget_base, h.retry_override,
    p.retry_min_retries, p.retry_delay_secs, p.retry_strategy, p.retry_backoff_factor,
    p.retry_max_delay_secs, p.retry_jitter,
    a.attempt, a.started_at, a.duration_seconds, a.async_state, a.async_timeout_secs
FROM hooks AS h
JOIN projects AS p ON p.id = h.project_id
JOIN hook_attempts AS a ON a.hook_id = h.id AND a.lease_seq = h.lease_seq
WHERE h.id = sqlc.arg(id)
  AND h.async_deadline IS NOT NULL AND h.async_deadline <= now()
  AND a.async_state IN ('waiting', 'nacked')
ORDER BY a.attempt DESC
LIMIT 1
FOR UPDATE OF h SKIP LOCKED;

-- name: EndAsyncWait :exec
-- Puts a hook whose wait ended back in the shape of a hook in flight
-- (pending with a run_at), inside the transaction that then applies the
-- attempt's failure with the same queries as a failed delivery (retry or
-- fail). The row stays locked meanwhile, so no claim sees this state.
UPDATE hooks SET async_deadline = NULL, run_at = now() WHERE id = sqlc.arg(id);

-- name: FailAsyncAttempt :execrows
-- The attempt's wait ended without an ack: it is a failed attempt. A wait
-- that timed out is marked expired (its URLs then answer 410); a nacked one
-- stays nacked (a repeated nack answers 200).
UPDATE hook_attempts
SET outcome     = 'failure',
    error       = sqlc.arg(error),
    async_state = CASE WHEN async_state = 'waiting' THEN 'expired' ELSE async_state END
WHERE hook_id = sqlc.arg(hook_id) AND attempt = sqlc.arg(attempt);

-- name: NackForTest :execrows
-- What the gateway's nack does to a waiting hook (tests only): the attempt is
-- nacked and the wait ends now.
WITH nacked AS (
    UPDATE hook_attempts AS a
    SET async_state = 'nacked', async_deadline = now()
    WHERE a.hook_id = sqlc.arg(hook_id) AND a.lease_seq = sqlc.arg(lease_seq) AND a.async_state = 'waiting'
    RETURNING a.hook_id
)
UPDATE hooks AS h SET async_deadline = now()
WHERE h.id IN (SELECT n.hook_id FROM nacked AS n);

-- name: ExpireAsyncWaitForTest :execrows
-- Brings a waiting hook's deadline to now, so a test need not wait for it.
UPDATE hooks SET async_deadline = now() WHERE id = sqlc.arg(id) AND async_deadline IS NOT NULL;

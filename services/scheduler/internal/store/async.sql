-- Async hooks (migration 00007): a delivery answered 202 waits for the
-- receiver's ack or nack, or for its timeout.

-- name: StartAsyncWait :one
-- The hook's current attempt was answered 202: the hook stays pending with no
-- run_at (no claim re-drives it) until async_deadline, now plus the 202's
-- Sundial-Async-Timeout when it gave one (asked_seconds above 0: the caller
-- passes 0 for a value outside pkg/asyncurl's bounds) or else the project's
-- async_timeout_secs. lease_expires_at is cleared, so any further result of
-- this lease is stale. The attempt counts from now on (attempts, tryAt).
UPDATE hooks AS h
SET attempts              = sqlc.arg(attempts),
    post_duration_seconds = sqlc.arg(post_duration_seconds),
    try_at                = sqlc.arg(started_at)::timestamptz,
    run_at                = NULL,
    lease_expires_at      = NULL,
    async_deadline        = now() + make_interval(secs => (
        CASE WHEN sqlc.arg(asked_seconds)::integer > 0
             THEN sqlc.arg(asked_seconds)::integer
             ELSE p.async_timeout_secs END)::float8),
    updated_at            = now()
FROM projects AS p
WHERE h.id = sqlc.arg(id) AND p.id = h.project_id
RETURNING h.async_deadline::timestamptz AS async_deadline,
    (CASE WHEN sqlc.arg(asked_seconds)::integer > 0
          THEN sqlc.arg(asked_seconds)::integer
          ELSE p.async_timeout_secs END)::integer AS timeout_seconds;

-- name: InsertAsyncAttempt :execrows
-- Records the attempt answered 202 as waiting. The key (hook_id, attempt)
-- makes a repeat a no-op. No row written means the receiver answered before
-- this 202 was applied and the gateway recorded the attempt with its answer:
-- the applier then settles it at once (LockEndedAsyncWaits).
INSERT INTO hook_attempts (
    hook_id, attempt, lease_seq, started_at, duration_seconds, outcome, status_code, response_excerpt,
    async_state, async_deadline, async_timeout_secs,
    request_headers, response_headers, request_headers_omitted, response_headers_omitted
) VALUES (
    sqlc.arg(hook_id), sqlc.arg(attempt), sqlc.arg(lease_seq), sqlc.arg(started_at),
    sqlc.arg(duration_seconds), 'async', sqlc.narg(status_code), sqlc.narg(response_excerpt),
    'waiting', sqlc.arg(async_deadline), sqlc.arg(async_timeout_secs),
    sqlc.narg(request_headers)::jsonb, sqlc.narg(response_headers)::jsonb,
    sqlc.arg(request_headers_omitted), sqlc.arg(response_headers_omitted)
)
ON CONFLICT DO NOTHING;

-- name: CompleteAnsweredAttempt :exec
-- The 202 of an attempt its receiver answered first (InsertAsyncAttempt
-- wrote nothing: the gateway recorded the attempt with the answer): what
-- only the delivery knows, its duration, response excerpt and headers, goes
-- onto that attempt, when it is this delivery's (the same lease).
UPDATE hook_attempts
SET duration_seconds         = sqlc.arg(duration_seconds),
    response_excerpt         = sqlc.narg(response_excerpt),
    request_headers          = sqlc.narg(request_headers)::jsonb,
    response_headers         = sqlc.narg(response_headers)::jsonb,
    request_headers_omitted  = sqlc.arg(request_headers_omitted),
    response_headers_omitted = sqlc.arg(response_headers_omitted)
WHERE hook_id = sqlc.arg(hook_id) AND attempt = sqlc.arg(attempt) AND lease_seq = sqlc.arg(lease_seq);

-- name: ListenAsync :exec
-- Subscribes the connection to the notifications of migration 00010: an ack
-- or nack was recorded and waits for a scheduler to apply it.
LISTEN sundial_async;

-- name: EndedAsyncWaits :many
-- Hooks with an async answer to apply: answers recorded and not applied yet
-- (a read of the tiny partial index hook_attempts_answer_pending_idx), then
-- waits that timed out by the database clock, oldest first (an indexed
-- range read of hooks_async_deadline_idx); up to max_hooks of each. They are
-- then settled under LockEndedAsyncWaits.
WITH answered AS (
    SELECT DISTINCT a.hook_id AS id
    FROM hook_attempts AS a
    WHERE a.answer_pending
    LIMIT sqlc.arg(max_hooks)::integer
), timed_out AS (
    SELECT h.id
    FROM hooks AS h
    WHERE h.async_deadline IS NOT NULL AND h.async_deadline <= now()
    ORDER BY h.async_deadline
    LIMIT sqlc.arg(max_hooks)::integer
)
SELECT answered.id FROM answered
UNION
SELECT timed_out.id FROM timed_out;

-- name: LockEndedAsyncWaits :many
-- Locks, of the given hooks, those with an async answer to apply, in id
-- order, with what settling their attempt needs: the retry settings and the
-- attempt. That is a hook waiting for an answer whose wait timed out or whose
-- answer has come, or a hook still in flight whose receiver answered before
-- the scheduler applied its 202 (the attempt not counted yet, recorded by
-- the gateway under this lease or under an earlier one the claim re-drove
-- meanwhile: the answer the receiver was told was accepted counts). SKIP
-- LOCKED: a hook another scheduler holds is left to it; one a batch of
-- results holds is settled by that batch when the 202 finds its attempt
-- answered (result.applyBatch). The conditions are on the hook, so a hook
-- settled meanwhile no longer matches. NotLiveAnswers is their negation.
SELECT h.id, h.project_id, h.domain, h.path, h.lease_seq, h.retry_budget_base, h.retry_override,
    h.sequence_run_id, p.retry_min_retries, p.retry_delay_secs, p.retry_strategy, p.retry_backoff_factor,
    p.retry_max_delay_secs, p.retry_jitter, p.failure_policy,
    a.attempt, a.started_at, a.duration_seconds, a.async_state, a.async_timeout_secs
FROM hooks AS h
JOIN projects AS p ON p.id = h.project_id
JOIN hook_attempts AS a ON a.hook_id = h.id
WHERE h.id = ANY(sqlc.arg(ids)::uuid[])
  AND h.status = 'pending'
  AND (
    (h.async_deadline IS NOT NULL AND a.attempt = h.attempts AND a.lease_seq = h.lease_seq
        AND (h.async_deadline <= now() OR a.answer_pending))
    OR (h.async_deadline IS NULL AND h.lease_expires_at IS NOT NULL AND a.attempt = h.attempts + 1
        AND a.lease_seq <= h.lease_seq AND a.answer_pending))
ORDER BY h.id
FOR UPDATE OF h SKIP LOCKED;

-- name: SettleAsyncAttempts :exec
-- Records how the async attempts settled (parallel arrays): an empty error
-- is an ack (success), any other a failure with that text and class. A wait that
-- timed out is marked expired (its URLs then answer 410); an acked or
-- nacked one keeps its state (a repeated answer answers 200). The answer is
-- applied: answer_pending is cleared.
UPDATE hook_attempts AS a
SET outcome        = CASE WHEN u.error = '' THEN 'success' ELSE 'failure' END,
    error          = NULLIF(u.error, ''),
    failure_class  = NULLIF(u.failure_class, ''),
    async_state    = CASE WHEN a.async_state = 'waiting' THEN 'expired' ELSE a.async_state END,
    answer_pending = false
FROM (
    SELECT unnest(sqlc.arg(hook_ids)::uuid[]) AS hook_id,
        unnest(sqlc.arg(attempts)::integer[]) AS attempt,
        unnest(sqlc.arg(errors)::text[]) AS error,
        unnest(sqlc.arg(failure_classes)::text[]) AS failure_class
) AS u
WHERE a.hook_id = u.hook_id AND a.attempt = u.attempt;

-- name: ForgetDeadAnswers :execrows
-- Clears answer_pending on the given hooks' answers that can no longer apply
-- (the negation of LockEndedAsyncWaits' condition, so no sweep lists them
-- again): the hook moved on without them, say because the delivery's own
-- result of a re-driven lease was applied first. A hook another
-- transaction is settling still matches as of this statement's snapshot and
-- keeps its answer.
UPDATE hook_attempts AS a
SET answer_pending = false
FROM hooks AS h
WHERE a.hook_id = ANY(sqlc.arg(ids)::uuid[]) AND a.answer_pending AND h.id = a.hook_id
  AND NOT (h.status = 'pending' AND (
    (h.async_deadline IS NOT NULL AND a.attempt = h.attempts AND a.lease_seq = h.lease_seq)
    OR (h.async_deadline IS NULL AND h.lease_expires_at IS NOT NULL AND a.attempt = h.attempts + 1
        AND a.lease_seq <= h.lease_seq)));

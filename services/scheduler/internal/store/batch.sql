-- Batched result application (package result, batch.go): one transaction
-- applies many AttemptResults with one statement per kind of change instead
-- of a round trip per result. Arrays are parallel: element i of each
-- describes one result. (Parallel unnest calls in one select list zip the
-- arrays; sqlc knows only the one-argument unnest.)

-- name: LockLeasedHooks :many
-- Locks the hooks that still hold the lease of a result (a pair
-- (hook_ids[i], lease_seqs[i])); a pair with no row is stale (the hook is
-- gone, was re-driven under a newer lease, or the result was already
-- applied). Rows are locked in id order, so two batches over
-- overlapping hooks wait for each other instead of deadlocking.
-- sequence_run_id tells a sequence step's hook (package runstep).
-- post_at gives a first attempt its lateness (the dashboard's figures).
-- failure_policy is the project's action per failure class (pkg/failclass).
-- A batch's successes are not locked here: CompleteHooks checks their
-- lease as it completes them, so their rows are written once rather than
-- locked and then written.
SELECT h.id, h.lease_seq, h.project_id, h.domain, h.path, h.post_at, h.retry_budget_base, h.retry_override,
    h.sequence_run_id, p.retry_min_retries, p.retry_delay_secs, p.retry_strategy, p.retry_backoff_factor,
    p.retry_max_delay_secs, p.retry_jitter, p.failure_policy
FROM hooks AS h
JOIN projects AS p ON p.id = h.project_id
WHERE (h.id, h.lease_seq) IN (
        SELECT unnest(sqlc.arg(hook_ids)::uuid[]), unnest(sqlc.arg(lease_seqs)::bigint[]))
  AND h.status = 'pending'
  AND h.lease_expires_at IS NOT NULL
ORDER BY h.id
FOR UPDATE OF h;

-- name: InsertAttempts :execrows
-- Records attempts. A status code of 0 and an empty error, failure class,
-- excerpt or headers (a JSON object, as text) are stored as NULL (arrays cannot carry
-- NULL through sqlc). The key (hook_id, attempt) makes a repeat a no-op.
INSERT INTO hook_attempts (
    hook_id, attempt, lease_seq, started_at, duration_seconds, outcome, status_code, error, response_excerpt,
    request_headers, response_headers, request_headers_omitted, response_headers_omitted, failure_class
)
SELECT u.hook_id, u.attempt, u.lease_seq, u.started_at, u.duration_seconds, u.outcome,
    NULLIF(u.status_code, 0), NULLIF(u.error, ''), NULLIF(u.response_excerpt, ''),
    NULLIF(u.request_headers, '')::jsonb, NULLIF(u.response_headers, '')::jsonb,
    u.request_headers_omitted, u.response_headers_omitted, NULLIF(u.failure_class, '')
FROM (
    SELECT unnest(sqlc.arg(hook_ids)::uuid[]) AS hook_id,
        unnest(sqlc.arg(attempts)::integer[]) AS attempt,
        unnest(sqlc.arg(lease_seqs)::bigint[]) AS lease_seq,
        unnest(sqlc.arg(started_ats)::timestamptz[]) AS started_at,
        unnest(sqlc.arg(durations)::float8[]) AS duration_seconds,
        unnest(sqlc.arg(outcomes)::text[]) AS outcome,
        unnest(sqlc.arg(status_codes)::integer[]) AS status_code,
        unnest(sqlc.arg(errors)::text[]) AS error,
        unnest(sqlc.arg(excerpts)::text[]) AS response_excerpt,
        unnest(sqlc.arg(request_headers)::text[]) AS request_headers,
        unnest(sqlc.arg(response_headers)::text[]) AS response_headers,
        unnest(sqlc.arg(request_headers_omitted)::integer[]) AS request_headers_omitted,
        unnest(sqlc.arg(response_headers_omitted)::integer[]) AS response_headers_omitted,
        unnest(sqlc.arg(failure_classes)::text[]) AS failure_class
) AS u
ON CONFLICT DO NOTHING;

-- name: CompleteHooks :many
-- The attempts succeeded (or were acked): the hooks that still hold the
-- lease of a success (a pair (ids[i], lease_seqs[i])) are completed, and
-- returned with what settling the success needs of them (the columns of
-- LockLeasedHooks); a pair with no row is stale, as there. The lease is
-- checked here rather than by a lock taken first, so that a success
-- writes its hook's row once: the row is locked by this update, and the
-- attempt recorded after it in the same transaction. A delivery's result
-- holds the lease while its hook is pending under it and in flight
-- (lease_expires_at set: a hook whose lease ended with a 202 is waiting
-- for its answer, and a second result of that lease is stale). With
-- waits_ended, the caller is ending async waits whose hooks it has locked
-- (LockEndedAsyncWaits), and a hook waiting under the lease
-- (async_deadline set) holds it too. Rows are updated
-- in the order of the pairs, which callers sort by id, as LockLeasedHooks
-- locks them, where the plan follows the pairs; a batch that deadlocks
-- with another all the same is applied result by result (package result,
-- postgres.RetryAlone). tryAt shows when each attempt was made. An async wait the
-- hook was in ends.
UPDATE hooks AS h
SET status                = 'completed',
    attempts              = u.attempts,
    post_duration_seconds = u.duration,
    failure_error         = NULL,
    failure_class         = NULL,
    try_at                = u.started_at,
    run_at                = NULL,
    lease_expires_at      = NULL,
    async_deadline        = NULL,
    updated_at            = now()
FROM (
    SELECT unnest(sqlc.arg(ids)::uuid[]) AS id,
        unnest(sqlc.arg(lease_seqs)::bigint[]) AS lease_seq,
        unnest(sqlc.arg(attempts)::integer[]) AS attempts,
        unnest(sqlc.arg(durations)::float8[]) AS duration,
        unnest(sqlc.arg(started_ats)::timestamptz[]) AS started_at
) AS u, projects AS p
WHERE h.id = u.id
  AND h.lease_seq = u.lease_seq
  AND h.status = 'pending'
  AND (h.lease_expires_at IS NOT NULL OR (sqlc.arg(waits_ended)::boolean AND h.async_deadline IS NOT NULL))
  AND p.id = h.project_id
RETURNING h.id, h.lease_seq, h.updated_at, h.project_id, h.domain, h.path, h.post_at, h.retry_budget_base,
    h.retry_override, h.sequence_run_id, p.retry_min_retries, p.retry_delay_secs, p.retry_strategy,
    p.retry_backoff_factor, p.retry_max_delay_secs, p.retry_jitter;

-- name: SettleFailedHooks :many
-- The attempts failed (or were nacked, or their async wait timed out): the
-- hooks, locked by the caller's transaction, are settled. A final failure
-- (finals[i]) fails the hook for good (tryAt shows when its last attempt was
-- made); any other is retried delays[i] seconds from now by the database
-- clock. The hook keeps the failure's error and class (failure_classes[i],
-- empty: none). An async wait the hook was in ends. at is the retry time, or when
-- the hook failed.
UPDATE hooks AS h
SET status                = CASE WHEN u.final THEN 'failed' ELSE 'retry' END,
    attempts              = u.attempts,
    post_duration_seconds = u.duration,
    failure_error         = u.failure_error,
    failure_class         = NULLIF(u.failure_class, ''),
    try_at                = CASE WHEN u.final THEN u.started_at
                                 ELSE now() + make_interval(secs => u.delay) END,
    run_at                = CASE WHEN u.final THEN NULL
                                 ELSE now() + make_interval(secs => u.delay) END,
    lease_expires_at      = NULL,
    async_deadline        = NULL,
    updated_at            = now()
FROM (
    SELECT unnest(sqlc.arg(ids)::uuid[]) AS id,
        unnest(sqlc.arg(attempts)::integer[]) AS attempts,
        unnest(sqlc.arg(durations)::float8[]) AS duration,
        unnest(sqlc.arg(failure_errors)::text[]) AS failure_error,
        unnest(sqlc.arg(failure_classes)::text[]) AS failure_class,
        unnest(sqlc.arg(started_ats)::timestamptz[]) AS started_at,
        unnest(sqlc.arg(delays)::float8[]) AS delay,
        unnest(sqlc.arg(finals)::boolean[]) AS final
) AS u
WHERE h.id = u.id
RETURNING h.id, (CASE WHEN u.final THEN h.updated_at ELSE h.try_at END)::timestamptz AS at;

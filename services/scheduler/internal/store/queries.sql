-- name: ClaimDueHooks :many
-- Claims up to batch_size hooks due by the database clock (new, retrying, or
-- with an expired lease) under a fresh lease, counting re-drives (see
-- migration 00008). SKIP LOCKED lets several
-- schedulers claim at once without waiting for or double-claiming each
-- other's rows; run_at moves to the lease expiry, so the row is due again
-- only if its result never comes. updated_at is left alone: it is the hook's
-- user-visible update time.
UPDATE hooks AS h
SET lease_seq        = h.lease_seq + 1,
    lease_expires_at = now() + make_interval(secs => sqlc.arg(lease_seconds)::float8),
    run_at           = now() + make_interval(secs => sqlc.arg(lease_seconds)::float8),
    -- A pending hook that still has a lease expiry lost its previous lease.
    redrives         = CASE WHEN h.status = 'pending' AND h.lease_expires_at IS NOT NULL
                            THEN h.redrives + 1 ELSE 0 END,
    status           = 'pending'
FROM (
    SELECT d.id, d.run_at
    FROM hooks AS d
    WHERE d.status IN ('pending', 'retry') AND d.run_at <= now()
    ORDER BY d.run_at
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
) AS due, projects AS p
WHERE h.id = due.id AND p.id = h.project_id
RETURNING h.id, h.project_id, h.path, h.domain, h.data, h.post_at, h.created_at, h.updated_at,
    h.attempts, h.retry_budget_base, h.lease_seq, h.lease_expires_at::timestamptz AS lease_expires_at,
    h.redrives, h.retry_override, p.retry_min_retries, p.retry_delay_secs, p.retry_strategy, p.retry_backoff_factor,
    p.retry_max_delay_secs, p.retry_jitter,
    -- The run_at the hook was claimed for, and the database clock as the
    -- row was returned: the caller publishes the DueHook no sooner than
    -- due_at - db_now after the answer reached it (see claim.releaseAt).
    due.run_at::timestamptz AS due_at, clock_timestamp()::timestamptz AS db_now;

-- name: PrefetchDueHooks :many
-- The hooks due within the next window_seconds by the database clock (an
-- indexed range read of hooks_due_idx, ids and times only), soonest first,
-- with the database's now so the caller can learn its clock offset.
SELECT d.id, d.run_at::timestamptz AS run_at, now()::timestamptz AS db_now
FROM hooks AS d
WHERE d.status IN ('pending', 'retry')
  AND d.run_at <= now() + make_interval(secs => sqlc.arg(window_seconds)::float8)
ORDER BY d.run_at
LIMIT sqlc.arg(max_hooks)::integer;

-- name: ClaimHooksByID :many
-- ClaimDueHooks restricted to the given ids: the just-in-time claim of hooks
-- the scheduler holds in memory, up to ahead_seconds before they are due by
-- the database clock (run_at <= now() + ahead), so that the claim's commit
-- is off the delivery's critical path; the caller holds each DueHook until
-- its due_at by the same clock. A hook deleted, finished, rescheduled or
-- claimed by another scheduler meanwhile is skipped. Same columns as
-- ClaimDueHooks.
UPDATE hooks AS h
SET lease_seq        = h.lease_seq + 1,
    lease_expires_at = now() + make_interval(secs => sqlc.arg(lease_seconds)::float8),
    run_at           = now() + make_interval(secs => sqlc.arg(lease_seconds)::float8),
    -- A pending hook that still has a lease expiry lost its previous lease.
    redrives         = CASE WHEN h.status = 'pending' AND h.lease_expires_at IS NOT NULL
                            THEN h.redrives + 1 ELSE 0 END,
    status           = 'pending'
FROM (
    SELECT d.id, d.run_at
    FROM hooks AS d
    WHERE d.id = ANY(sqlc.arg(ids)::uuid[])
      AND d.status IN ('pending', 'retry')
      AND d.run_at <= now() + make_interval(secs => sqlc.arg(ahead_seconds)::float8)
    FOR UPDATE SKIP LOCKED
) AS due, projects AS p
WHERE h.id = due.id AND p.id = h.project_id
RETURNING h.id, h.project_id, h.path, h.domain, h.data, h.post_at, h.created_at, h.updated_at,
    h.attempts, h.retry_budget_base, h.lease_seq, h.lease_expires_at::timestamptz AS lease_expires_at,
    h.redrives, h.retry_override, p.retry_min_retries, p.retry_delay_secs, p.retry_strategy, p.retry_backoff_factor,
    p.retry_max_delay_secs, p.retry_jitter,
    -- The run_at the hook was claimed for, and the database clock as the
    -- row was returned: the caller publishes the DueHook no sooner than
    -- due_at - db_now after the answer reached it (see claim.releaseAt).
    due.run_at::timestamptz AS due_at, clock_timestamp()::timestamptz AS db_now;

-- name: WaitingHooks :many
-- Of the given ids, those still waiting to be claimed within the next
-- window_seconds by the database clock: a just-in-time claim that came too
-- early (run_at > db_now) retries at run_at; one that found the row locked
-- by another transaction (run_at <= db_now) retries shortly.
SELECT d.id, d.run_at::timestamptz AS run_at, now()::timestamptz AS db_now
FROM hooks AS d
WHERE d.id = ANY(sqlc.arg(ids)::uuid[])
  AND d.status IN ('pending', 'retry')
  AND d.run_at <= now() + make_interval(secs => sqlc.arg(window_seconds)::float8);

-- name: ListenDue :exec
-- Subscribes the connection to the notifications of migration 00006.
LISTEN sundial_due;

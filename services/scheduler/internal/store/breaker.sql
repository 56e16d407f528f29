-- Circuit breakers of endpoints (migration 00012, package breaker,
-- docs/security.md "Circuit breaker and Retry-After"). The transaction that
-- applies a batch of results moves the breakers of the batch's units; the
-- claim statement (queries.sql) defers the hooks of paused units and
-- takes the probes. A unit is (project_id, domain); arrays are parallel, one
-- element per unit.

-- name: TroubledBreakers :many
-- Of the given units, those with failures or a pause: the only ones a
-- batch of healthy answers can change. With nothing failing it is a
-- primary-key probe per unit that finds nothing, and locks nothing.
SELECT b.project_id, b.domain
FROM endpoint_breakers AS b
WHERE (b.project_id, b.domain) IN (
        SELECT unnest(sqlc.arg(project_ids)::uuid[]), unnest(sqlc.arg(domains)::text[]))
  AND (b.consecutive_failures > 0 OR b.paused_at IS NOT NULL OR b.resume_requested);

-- name: EnsureBreakers :exec
-- Creates the rows of units that have none yet (a first failure), in key
-- order, so that LockBreakers has a row to lock.
INSERT INTO endpoint_breakers (project_id, domain)
SELECT u.project_id, u.domain
FROM (
    SELECT unnest(sqlc.arg(project_ids)::uuid[]) AS project_id, unnest(sqlc.arg(domains)::text[]) AS domain
) AS u
ORDER BY u.project_id, u.domain
ON CONFLICT DO NOTHING;

-- name: LockBreakers :many
-- Locks the units' rows in key order (concurrent batches wait for each
-- other instead of deadlocking) and returns them with the database clock,
-- the now of every time the state machine sets.
SELECT b.project_id, b.domain, b.consecutive_failures, b.failing_since, b.last_error, b.paused_at,
    b.paused_until, b.pause_cause, b.pause_reason, b.cooldown_secs, b.held_until, b.probe_hook_id,
    b.alerted, b.resume_requested, b.healthy_at, b.healthy_path, b.healthy_path_failing,
    now()::timestamptz AS db_now
FROM endpoint_breakers AS b
WHERE (b.project_id, b.domain) IN (
        SELECT unnest(sqlc.arg(project_ids)::uuid[]), unnest(sqlc.arg(domains)::text[]))
ORDER BY b.project_id, b.domain
FOR UPDATE;

-- name: LockResumeRequests :many
-- Up to max_rows units whose resumption the API asked for, locked (another
-- scheduler takes the others). Same columns as LockBreakers.
SELECT b.project_id, b.domain, b.consecutive_failures, b.failing_since, b.last_error, b.paused_at,
    b.paused_until, b.pause_cause, b.pause_reason, b.cooldown_secs, b.held_until, b.probe_hook_id,
    b.alerted, b.resume_requested, b.healthy_at, b.healthy_path, b.healthy_path_failing,
    now()::timestamptz AS db_now
FROM endpoint_breakers AS b
WHERE b.resume_requested
ORDER BY b.project_id, b.domain
LIMIT sqlc.arg(max_rows)::integer
FOR UPDATE SKIP LOCKED;

-- name: WriteBreaker :exec
-- Stores a unit's new state, its row locked by the caller.
UPDATE endpoint_breakers
SET consecutive_failures = sqlc.arg(consecutive_failures),
    failing_since        = sqlc.narg(failing_since),
    last_error           = sqlc.narg(last_error),
    paused_at            = sqlc.narg(paused_at),
    paused_until         = sqlc.narg(paused_until),
    pause_cause          = sqlc.narg(pause_cause),
    pause_reason         = sqlc.narg(pause_reason),
    cooldown_secs        = sqlc.arg(cooldown_secs),
    held_until           = sqlc.narg(held_until),
    probe_hook_id        = sqlc.narg(probe_hook_id),
    alerted              = sqlc.arg(alerted),
    resume_requested     = sqlc.arg(resume_requested),
    healthy_at           = sqlc.narg(healthy_at),
    healthy_path         = sqlc.narg(healthy_path),
    healthy_path_failing = sqlc.arg(healthy_path_failing),
    updated_at           = now()
WHERE project_id = sqlc.arg(project_id) AND domain = sqlc.arg(domain);

-- name: ReleaseHeldHooks :execrows
-- A pause ended: the hooks it deferred are due now. They are those of the
-- unit, unleased, whose run_at the claim moved past their own time (post_at
-- for a hook not yet tried, try_at for a retry) and no further than
-- held_until: a range of hooks_due_idx, whatever the number of other
-- hooks the unit has. A retry whose own time is later (a Retry-After of its
-- own) keeps it.
UPDATE hooks AS h
SET run_at = now()
WHERE h.status IN ('pending', 'retry')
  AND h.run_at > now() AND h.run_at <= sqlc.arg(held_until)::timestamptz
  AND h.project_id = sqlc.arg(project_id) AND h.domain = sqlc.arg(domain)
  AND h.lease_expires_at IS NULL
  AND h.run_at > CASE WHEN h.status = 'retry' THEN h.try_at ELSE h.post_at END;

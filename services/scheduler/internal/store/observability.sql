-- name: CountDueHooks :one
-- The hooks due by the database clock and not yet claimed (new, retrying,
-- or with an expired lease): the scheduler's queue depth. It reads
-- hooks_due_idx only, and stops counting at max_hooks so a huge backlog
-- costs a bounded scan.
SELECT count(*)::bigint AS due
FROM (
    SELECT 1
    FROM hooks AS d
    WHERE d.status IN ('pending', 'retry') AND d.run_at <= now()
    LIMIT sqlc.arg(max_hooks)::integer
) AS due;

-- name: CountPausedEndpoints :one
-- The receivers' domains whose circuit breaker holds them paused (opened
-- by failures, or waiting out a Retry-After), counted up to max_endpoints.
SELECT count(*)::bigint AS paused
FROM (
    SELECT 1
    FROM endpoint_breakers AS b
    WHERE b.paused_at IS NOT NULL
    LIMIT sqlc.arg(max_endpoints)::integer
) AS paused;

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

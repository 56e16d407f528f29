-- Retention (internal/retention; docs/operations.md, "Retention").

-- name: DeleteExpiredHooks :one
-- Deletes up to max_hooks completed and failed hooks whose last change
-- (updated_at: when they finished) is older than their project's
-- retention, the least of retention_days and the plan's bound, with their
-- attempts, and says how many of each went. Pending and retry hooks are
-- never candidates. Each project's expired hooks are found oldest first
-- through hooks_finished_idx, which holds only finished hooks: a project
-- with nothing expired costs one index probe. SKIP LOCKED leaves a hook
-- another transaction holds (another scheduler's cleaner, a bulk retry
-- making it pending) to a later pass, and the lock taken here makes such a
-- change wait and then find the row gone. Attempts are deleted by this
-- statement rather than by the trigger that deletes a hook's attempts with
-- it (migration 00026) so that they can be counted; the trigger then finds
-- none.
--
-- The same statement deletes up to max_hooks ordering keys (migration
-- 00036) whose head is gone, untouched for an hour: such a key is free, as
-- a key without a row is, so its row only takes room. A claim that takes
-- the key meanwhile sets updated_at, which the delete checks again on the
-- row's newest version, so it leaves that row; one that finds the row gone
-- inserts it again. A head deleted by this statement frees its key for a
-- later pass.
WITH doomed AS MATERIALIZED (
    SELECT h.id
    FROM projects AS p
    CROSS JOIN LATERAL (
        SELECT e.id
        FROM hooks AS e
        WHERE e.project_id = p.id
          AND e.status IN ('completed', 'failed')
          AND e.updated_at < now() - make_interval(days => LEAST(p.retention_days, p.plan_max_retention_days))
        ORDER BY e.updated_at
        LIMIT sqlc.arg(max_hooks)::integer
        FOR UPDATE OF e SKIP LOCKED
    ) AS h
    LIMIT sqlc.arg(max_hooks)::integer
),
gone_attempts AS (
    DELETE FROM hook_attempts AS a
    USING doomed AS d
    WHERE a.hook_id = d.id
    RETURNING 1
),
gone_hooks AS (
    DELETE FROM hooks AS h
    USING doomed AS d
    WHERE h.id = d.id AND h.status IN ('completed', 'failed')
    RETURNING 1
),
gone_keys AS (
    DELETE FROM ordering_keys AS k
    WHERE (k.project_id, k.key) IN (
            SELECT i.project_id, i.key FROM ordering_keys AS i
            WHERE i.updated_at < now() - interval '1 hour'
              AND NOT EXISTS (SELECT 1 FROM hooks AS g WHERE g.id = i.active_hook_id)
            LIMIT sqlc.arg(max_hooks)::integer
            FOR UPDATE SKIP LOCKED)
      AND k.updated_at < now() - interval '1 hour'
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone_hooks)::bigint AS hooks,
       (SELECT count(*) FROM gone_attempts)::bigint AS attempts,
       (SELECT count(*) FROM gone_keys)::bigint AS ordering_keys;

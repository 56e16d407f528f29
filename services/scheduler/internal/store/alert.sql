-- The alert outbox and failing endpoints (migration 00009,
-- docs/notifications.md): written in the transaction that applies a result,
-- so that an alert exists exactly when its cause does. The notifier reads
-- alerts from the table when their event never arrives.

-- name: InsertAlerts :exec
-- Writes alerts into the outbox (parallel arrays, one element per alert).
-- An alert's id is deterministic, so writing the same occurrence again is a
-- no-op.
INSERT INTO alerts (id, project_id, kind, body, occurred_at)
SELECT u.id, u.project_id, u.kind, u.body, u.occurred_at
FROM (
    SELECT unnest(sqlc.arg(ids)::text[]) AS id,
        unnest(sqlc.arg(project_ids)::uuid[]) AS project_id,
        unnest(sqlc.arg(kinds)::text[]) AS kind,
        unnest(sqlc.arg(bodies)::bytea[]) AS body,
        unnest(sqlc.arg(occurred_ats)::timestamptz[]) AS occurred_at
) AS u
ON CONFLICT DO NOTHING;

-- name: MarkEndpointsFailing :exec
-- Hooks ran out of retries: their endpoints are failing since now (by the
-- database clock), or have more failed hooks (parallel arrays, one element
-- per failed hook). Hooks to the same endpoint are counted together, since one
-- statement cannot update a row twice; rows are written in key order, so
-- concurrent batches wait for each other instead of deadlocking.
INSERT INTO failing_endpoints (project_id, domain, path, failing_since, failed_hooks)
SELECT u.project_id, u.domain, u.path, now(), count(*)::integer
FROM (
    SELECT unnest(sqlc.arg(project_ids)::uuid[]) AS project_id,
        unnest(sqlc.arg(domains)::text[]) AS domain,
        unnest(sqlc.arg(paths)::text[]) AS path
) AS u
GROUP BY u.project_id, u.domain, u.path
ORDER BY u.project_id, u.domain, u.path
ON CONFLICT (project_id, domain, path)
DO UPDATE SET failed_hooks = failing_endpoints.failed_hooks + EXCLUDED.failed_hooks;

-- name: RecoverEndpoints :many
-- Deliveries to the endpoints succeeded: those that were failing no longer
-- are (parallel arrays, one element per success; repeats allowed). A
-- primary-key lookup per distinct endpoint, cheap when nothing is failing;
-- each row returned is what an endpoint.recovered alert reports. The rows are locked in key order
-- before they are deleted, so concurrent batches do not deadlock.
WITH doomed AS (
    SELECT f.project_id, f.domain, f.path
    FROM failing_endpoints AS f
    WHERE (f.project_id, f.domain, f.path) IN (
        SELECT unnest(sqlc.arg(project_ids)::uuid[]), unnest(sqlc.arg(domains)::text[]),
            unnest(sqlc.arg(paths)::text[]))
    ORDER BY f.project_id, f.domain, f.path
    FOR UPDATE OF f
)
DELETE FROM failing_endpoints AS f
USING doomed AS d
WHERE f.project_id = d.project_id AND f.domain = d.domain AND f.path = d.path
RETURNING f.project_id, f.domain, f.path, f.failing_since, f.failed_hooks;

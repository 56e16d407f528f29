-- Endpoint recovery on an async ack (docs/notifications.md, "Alerts"): the
-- ack that completes a hook is the endpoint's successful delivery, so its
-- transaction ends the endpoint's failing spell exactly as the scheduler's
-- does when it applies a success (services/scheduler/internal/store/alert.sql).
-- The alert itself is written with InsertAlert (alert.sql).

-- name: RecoverEndpointOfHook :many
-- The endpoint (project, domain, path) of the hook, if it was failing, no
-- longer is. A primary-key delete, cheap when nothing is failing; the row
-- returned (at most one) is what the endpoint.recovered alert reports, with
-- the time of the recovery by the database clock (the transaction's, like
-- the hook's updated_at).
DELETE FROM failing_endpoints AS f
USING hooks AS h
WHERE h.id = @hook_id
    AND f.project_id = h.project_id AND f.domain = h.domain AND f.path = h.path
RETURNING f.project_id, f.domain, f.path, f.failing_since, f.failed_hooks,
    now()::timestamptz AS recovered_at;

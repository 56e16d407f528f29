-- What the listener suite waits on: the sockets the gateways report for a
-- project, and the hooks held by its resume window.

-- name: ConnectedSockets :one
-- The project's sockets on gateways that are alive (listener_live, as the
-- claim reads them: docs/listener.md, "Routing").
SELECT COALESCE(sum(sockets), 0)::integer AS sockets
FROM listener_presence
WHERE project_id = sqlc.arg(project_id) AND listener_live(connected, seen_at);

-- name: HeldHooks :one
SELECT count(*)::integer AS held
FROM hooks
WHERE project_id = sqlc.arg(project_id) AND held_due_at IS NOT NULL;

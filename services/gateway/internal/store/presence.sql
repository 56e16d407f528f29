-- The dashboard's listeners page (docs/dashboard.md): a project's presence
-- rows with the database clock's verdict on each (docs/listener.md;
-- listening is listener_live, migration 00028; a resume window still
-- ahead holds the project's hooks when nothing listens).

-- name: ListProjectPresence :many
SELECT gateway_id, connected, sockets, seen_at, resume_until,
    listener_live(connected, seen_at)::boolean AS live,
    (resume_until > now())::boolean AS window_open
FROM listener_presence
WHERE project_id = $1
ORDER BY gateway_id
LIMIT 100;

-- name: CountProjectHeldHooks :one
SELECT count(*) FROM hooks WHERE project_id = $1 AND held_due_at IS NOT NULL;

-- The dashboard's listeners page (docs/dashboard.md): a project's presence
-- rows with the database clock's verdict on each (docs/listener.md,
-- migration 00015: listening = connected and seen within 30 s; a resume
-- window still ahead holds the project's hooks when nothing listens).

-- name: ListProjectPresence :many
SELECT gateway_id, connected, sockets, seen_at, resume_until,
    (connected AND seen_at > now() - interval '30 seconds')::boolean AS live,
    (resume_until > now())::boolean AS window_open
FROM listener_presence
WHERE project_id = $1
ORDER BY gateway_id
LIMIT 100;

-- name: CountProjectHeldHooks :one
SELECT count(*) FROM hooks WHERE project_id = $1 AND held_due_at IS NOT NULL;

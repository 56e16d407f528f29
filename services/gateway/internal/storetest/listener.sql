-- The listener's tables (migration 00015), as the gateway's tests read and
-- set them.

-- name: ListListenerPresence :many
SELECT project_id, gateway_id, connected, sockets, seen_at, resume_until,
       (resume_until > now() + interval '1 minute')::boolean AS window_ahead
FROM listener_presence
WHERE project_id = @project_id
ORDER BY gateway_id;

-- name: ExpireListenerTickets :execrows
-- Makes the project's tickets expired, as 60 s later.
UPDATE listener_tickets SET expires_at = now() - interval '1 second'
WHERE project_id = @project_id;

-- name: CountListenerTickets :one
SELECT count(*) FROM listener_tickets WHERE project_id = @project_id;

-- name: InsertListenerPresence :exec
-- A presence row of another gateway whose window ended ago_seconds ago.
INSERT INTO listener_presence (project_id, gateway_id, connected, resume_until)
VALUES (@project_id, @gateway_id, false, now() - make_interval(secs => @ago_seconds::double precision));

-- name: DeleteProject :execrows
DELETE FROM projects WHERE id = @id;

-- name: ListenListenerForTest :exec
LISTEN sundial_listener;

-- name: HoldHookForTest :exec
-- What the scheduler's claim does to a holding project's due hook: held
-- until an hour from now (for the dashboard's listeners page).
UPDATE hooks
SET held_due_at = run_at, run_at = now() + interval '1 hour'
WHERE project_id = @project_id AND id = @id;

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

-- name: InsertExpiredListenerTicket :exec
INSERT INTO listener_tickets (ticket_hash, project_id, api_key_id, expires_at)
VALUES (@ticket_hash, @project_id, @api_key_id, now() - interval '1 hour');

-- name: DeleteProject :execrows
DELETE FROM projects WHERE id = @id;

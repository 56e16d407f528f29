-- The listener (internal/listen, docs/listener.md): single-use tickets that
-- open a WebSocket, the revocation check of open sockets, and this
-- gateway's presence rows per project.

-- name: InsertListenerTicket :one
-- Only the SHA-256 of the ticket is stored; it expires ttl_seconds from
-- now by the database clock.
INSERT INTO listener_tickets (ticket_hash, project_id, api_key_id, expires_at)
VALUES (@ticket_hash, @project_id, @api_key_id, now() + make_interval(secs => @ttl_seconds::double precision))
RETURNING expires_at;

-- name: RedeemListenerTicket :one
-- Deletes the ticket (single use) and says whether it was still valid and
-- whether its key still is, with the project's name for the connected
-- message and the async timeout an accept without one gets. No row: the
-- ticket is unknown or was used.
WITH t AS (
    DELETE FROM listener_tickets
    WHERE ticket_hash = @ticket_hash
    RETURNING project_id, api_key_id, expires_at
)
SELECT t.project_id, t.api_key_id, p.name AS project_name, p.async_timeout_secs,
       (t.expires_at > now())::boolean AS live,
       (k.revoked_at IS NULL)::boolean AS key_usable
FROM t
JOIN projects AS p ON p.id = t.project_id
JOIN api_keys AS k ON k.id = t.api_key_id;

-- name: UsableListenerKeys :many
-- Of the keys that opened this gateway's sockets, those not revoked (a
-- deleted project's keys are deleted with it): the others' sockets close.
SELECT id FROM api_keys
WHERE id = ANY(@key_ids::uuid[]) AND revoked_at IS NULL;

-- name: DeleteExpiredListenerTickets :execrows
-- Tickets never redeemed, a bounded batch at a time.
DELETE FROM listener_tickets
WHERE ticket_hash IN (
    SELECT ticket_hash FROM listener_tickets
    WHERE expires_at < now()
    ORDER BY expires_at
    LIMIT @max_rows
);

-- name: OpenListenerPresence :one
-- The project's first socket on this gateway: its row is connected, and
-- the scheduler is told (NOTIFY sundial_listener) so that it releases the
-- hooks held in the resume window at once. No row: the project was
-- deleted.
WITH up AS (
    INSERT INTO listener_presence (project_id, gateway_id, connected, sockets, seen_at, resume_until)
    SELECT p.id, @gateway_id, true, @sockets, now(), now() + make_interval(secs => @window_seconds::double precision)
    FROM projects AS p
    WHERE p.id = @project_id
    ON CONFLICT (project_id, gateway_id) DO UPDATE
    SET connected = true, sockets = EXCLUDED.sockets, seen_at = EXCLUDED.seen_at,
        resume_until = EXCLUDED.resume_until
    RETURNING project_id
)
SELECT up.project_id, pg_notify('sundial_listener', up.project_id::text)::text AS notified FROM up;

-- name: RefreshListenerPresence :execrows
-- The heartbeat of every project this gateway holds sockets of, in one
-- statement: element i of the arrays is project i. Upserted, so that a row
-- removed meanwhile comes back; a deleted project's is skipped.
INSERT INTO listener_presence (project_id, gateway_id, connected, sockets, seen_at, resume_until)
SELECT p.id, @gateway_id, true, s.sockets, now(), now() + make_interval(secs => @window_seconds::double precision)
FROM (
    SELECT unnest(@project_ids::uuid[]) AS project_id, unnest(@sockets::integer[]) AS sockets
) AS s
JOIN projects AS p ON p.id = s.project_id
ON CONFLICT (project_id, gateway_id) DO UPDATE
SET connected = true, sockets = EXCLUDED.sockets, seen_at = EXCLUDED.seen_at,
    resume_until = EXCLUDED.resume_until;

-- name: CloseListenerPresence :execrows
-- The project's last socket on this gateway closed: its resume window
-- starts now.
UPDATE listener_presence
SET connected = false, sockets = 0, seen_at = now(),
    resume_until = now() + make_interval(secs => @window_seconds::double precision)
WHERE project_id = @project_id AND gateway_id = @gateway_id;

-- name: DeleteStaleListenerPresence :execrows
-- Rows whose resume window ended long ago decide nothing any more (a
-- connected row's window is always ahead while its gateway refreshes it).
-- Any gateway's: a gateway's id is its process's, so the rows of a replica
-- that stopped have no other writer left. A bounded batch at a time.
DELETE FROM listener_presence
WHERE (project_id, gateway_id) IN (
    SELECT project_id, gateway_id FROM listener_presence
    WHERE resume_until < now() - make_interval(secs => @grace_seconds::double precision)
    LIMIT @max_rows
);

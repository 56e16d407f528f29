-- The listener (`sundial listen`, docs/listener.md): single-use tickets to
-- open a WebSocket, each gateway's presence per project while it holds that
-- project's sockets, and the hooks held while a project's listener is in
-- its resume window.

-- +goose Up

-- A ticket is issued by any gateway and redeemed (deleted) by whichever
-- gateway the client's WebSocket reaches: single use, 60 s. Only the
-- SHA-256 of the ticket is kept.
CREATE TABLE listener_tickets (
    ticket_hash  bytea PRIMARY KEY CHECK (length(ticket_hash) = 32),
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    api_key_id   uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    expires_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX listener_tickets_expiry_idx ON listener_tickets (expires_at);

-- One row per (project, gateway replica) that holds or held a listener
-- socket of the project; the gateway is its only writer. While the
-- gateway holds at least one socket (connected) it refreshes seen_at every
-- 10 s; when its last socket of the project closes it clears connected.
-- resume_until is seen_at plus the gateway's resume window
-- (SUNDIAL_LISTENER_RESUME_WINDOW).
--
-- A project is *listening* when a row is connected and seen within 30 s
-- (a gateway killed stops refreshing); it is *holding* when it is not
-- listening and some row's resume_until is still ahead: its due hooks are
-- held (no lease, no attempt) until it listens again or the window ends.
-- Otherwise its hooks go to its domain.
CREATE TABLE listener_presence (
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    gateway_id    text NOT NULL,
    connected     boolean NOT NULL,
    sockets       integer NOT NULL DEFAULT 0 CHECK (sockets >= 0),
    seen_at       timestamptz NOT NULL DEFAULT now(),
    resume_until  timestamptz NOT NULL,
    PRIMARY KEY (project_id, gateway_id)
);

-- held_due_at: for a hook held by a listener's resume window, when it was
-- due (its run_at before the hold moved run_at to the window's end). A
-- reconnect releases the held hooks back to it, so they are delivered in
-- the order they fell due; a claim clears it. Only the scheduler writes it.
ALTER TABLE hooks ADD COLUMN held_due_at timestamptz;
CREATE INDEX hooks_held_idx ON hooks (project_id) WHERE held_due_at IS NOT NULL;

-- +goose Down
DROP INDEX hooks_held_idx;
ALTER TABLE hooks DROP COLUMN held_due_at;
DROP TABLE listener_presence;
DROP TABLE listener_tickets;

-- The one statement of when a project's listener is live (docs/listener.md,
-- "Routing"): a presence row connected and seen within 30 s. The gateway
-- refreshes seen_at every 10 s while it holds a socket, so a live row stops
-- being live 30 s after its gateway stops (killed, cut off). The claim, the
-- release of held hooks and the dashboard's listeners page all ask it here.
-- A SQL function of one expression, STABLE: PostgreSQL inlines it into each
-- query, so plans are those of the expression written out.

-- +goose Up
CREATE FUNCTION listener_live(connected boolean, seen_at timestamptz) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT connected AND seen_at > now() - interval '30 seconds' $$;

-- +goose Down
DROP FUNCTION listener_live(boolean, timestamptz);

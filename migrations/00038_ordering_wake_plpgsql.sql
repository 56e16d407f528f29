-- sundial_wake_ordering_key (migration 00036) becomes PL/pgSQL, with the
-- same statement. A LANGUAGE sql function that is not inlined plans its
-- statement at every call, and the row trigger calls it for every keyed
-- hook that finishes: planning the UPDATE cost more than running it. A
-- PL/pgSQL function keeps its statement's plan for the session.

-- +goose Up
-- +goose StatementBegin
-- Makes the next unfinished hook of a key due now (or at its postAt, if
-- that is later), unless it is leased. The row is written even when the
-- hook is due already: a claim that read the key before this transaction
-- committed and locks the hook after it tells by the row's new version
-- that what it read may be stale (ClaimHooks, blocked). Called when the
-- key's head finishes or is deleted, and by a resume.
CREATE OR REPLACE FUNCTION sundial_wake_ordering_key(p_project uuid, p_key text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE hooks AS h
    SET run_at = LEAST(h.run_at, GREATEST(h.post_at, now()))
    WHERE h.id = (
            SELECT n.id FROM hooks AS n
            WHERE n.project_id = p_project AND n.ordering_key = p_key AND n.run_at IS NOT NULL
            ORDER BY n.post_at, n.created_at, n.id
            LIMIT 1)
      AND h.lease_expires_at IS NULL
      AND h.async_deadline IS NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sundial_wake_ordering_key(p_project uuid, p_key text) RETURNS void
LANGUAGE sql AS $$
    UPDATE hooks AS h
    SET run_at = LEAST(h.run_at, GREATEST(h.post_at, now()))
    WHERE h.id = (
            SELECT n.id FROM hooks AS n
            WHERE n.project_id = p_project AND n.ordering_key = p_key AND n.run_at IS NOT NULL
            ORDER BY n.post_at, n.created_at, n.id
            LIMIT 1)
      AND h.lease_expires_at IS NULL
      AND h.async_deadline IS NULL;
$$;
-- +goose StatementEnd

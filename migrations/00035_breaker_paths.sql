-- A run of failures confined to one path of a domain, while another path
-- of it answered shortly before, is that path's fault, not the server's:
-- it does not open the domain's breaker (docs/security.md, "Circuit
-- breaker and Retry-After"). failing_path is the path of the run of
-- failures while it has one, many_paths says another path failed in it;
-- healthy_at and healthy_path are the last healthy answer that ended a
-- run. The scheduler writes them with the rest of the row; the nullable
-- columns and the constant default change no existing row.

-- +goose Up
ALTER TABLE endpoint_breakers ADD COLUMN IF NOT EXISTS failing_path text,
    ADD COLUMN IF NOT EXISTS many_paths boolean NOT NULL DEFAULT false,
    ADD COLUMN IF NOT EXISTS healthy_at timestamptz,
    ADD COLUMN IF NOT EXISTS healthy_path text;

-- +goose Down
ALTER TABLE endpoint_breakers DROP COLUMN IF EXISTS healthy_path, DROP COLUMN IF EXISTS healthy_at,
    DROP COLUMN IF EXISTS many_paths, DROP COLUMN IF EXISTS failing_path;

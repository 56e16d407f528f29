-- A run of failures that spares the path of the domain that answered
-- shortly before is those paths' fault, not the server's: it does not open
-- the domain's breaker (docs/security.md, "Circuit breaker and
-- Retry-After"). healthy_at and healthy_path are the last healthy answer
-- that ended a run of failures; healthy_path_failing says that path has
-- failed in the run since. The scheduler writes them with the rest of the
-- row; the nullable columns and the constant default change no existing
-- row.

-- +goose Up
ALTER TABLE endpoint_breakers ADD COLUMN IF NOT EXISTS healthy_at timestamptz,
    ADD COLUMN IF NOT EXISTS healthy_path text,
    ADD COLUMN IF NOT EXISTS healthy_path_failing boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE endpoint_breakers DROP COLUMN IF EXISTS healthy_path_failing, DROP COLUMN IF EXISTS healthy_path,
    DROP COLUMN IF EXISTS healthy_at;

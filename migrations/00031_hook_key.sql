-- +goose NO TRANSACTION

-- A hook's key: an optional name, unique in its project among the hooks
-- not yet finished (pending or retry), that POST /v1/hooks with the same
-- key replaces while it has not been claimed, and that GET and DELETE
-- /v1/hooks/by-key find (docs/choices.md, "Hook keys"). Once the hook has
-- finished, its key is free for the next hook, and the finished one keeps
-- it as a record.
--
-- Both indexes are partial on key IS NOT NULL: a hook without a key (most
-- of them) costs neither anything on any write. hooks_live_key_idx holds
-- the uniqueness (a hook leaves it when the scheduler finishes it);
-- hooks_key_idx finds the newest finished hook of a key. CONCURRENTLY, as
-- migration 00025, so that upgrading a busy deployment does not block
-- writes; goose runs this file outside a transaction for that. Adding the
-- nullable column without a default changes no row.

-- +goose Up
ALTER TABLE hooks ADD COLUMN IF NOT EXISTS key text;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS hooks_live_key_idx ON hooks (project_id, key)
    WHERE key IS NOT NULL AND status IN ('pending', 'retry');
CREATE INDEX CONCURRENTLY IF NOT EXISTS hooks_key_idx ON hooks (project_id, key, created_at)
    WHERE key IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS hooks_key_idx;
DROP INDEX CONCURRENTLY IF EXISTS hooks_live_key_idx;
ALTER TABLE hooks DROP COLUMN IF EXISTS key;

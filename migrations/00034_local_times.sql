-- +goose NO TRANSACTION

-- Local times that follow the tz database (docs/product.md, "Local times
-- and the tz database"). A hook created with postAtLocal + timezone keeps
-- its wall time (post_at_local: the local date and time, no zone) and its
-- zone, and tz_version names the tz database release its post_at was
-- resolved with. A scheduler built with a later release resolves the
-- pending ones again and moves post_at where the new rules put the wall
-- time. The three are NULL for a hook scheduled by instant or by delay and
-- set together (checked for new rows only, NOT VALID, so that adding the
-- check reads no existing row: they are all NULL).
--
-- A sequence's tz_version is the release its next_run_at was planned with
-- (the gateway's when it creates, replaces or resumes it; empty before
-- this migration, which sorts before every release): a scheduler of a
-- later release plans the calendar ones again. The constant default adds
-- the column without rewriting the table.
--
-- The indexes are partial, so that only pending local-time hooks and
-- active sequences cost anything on a write; CONCURRENTLY, as migration
-- 00031, so that upgrading a busy deployment does not block writes.

-- +goose Up
ALTER TABLE hooks ADD COLUMN IF NOT EXISTS post_at_local timestamp,
    ADD COLUMN IF NOT EXISTS timezone text,
    ADD COLUMN IF NOT EXISTS tz_version text;
ALTER TABLE hooks ADD CONSTRAINT hooks_local_time_check
    CHECK ((post_at_local IS NULL) = (timezone IS NULL) AND (timezone IS NULL) = (tz_version IS NULL)) NOT VALID;
CREATE INDEX CONCURRENTLY IF NOT EXISTS hooks_local_time_idx ON hooks (tz_version)
    WHERE timezone IS NOT NULL AND status = 'pending';
ALTER TABLE sequences ADD COLUMN IF NOT EXISTS tz_version text NOT NULL DEFAULT '';
CREATE INDEX CONCURRENTLY IF NOT EXISTS sequences_tz_version_idx ON sequences (tz_version)
    WHERE status = 'active';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS sequences_tz_version_idx;
ALTER TABLE sequences DROP COLUMN IF EXISTS tz_version;
DROP INDEX CONCURRENTLY IF EXISTS hooks_local_time_idx;
ALTER TABLE hooks DROP CONSTRAINT IF EXISTS hooks_local_time_check;
ALTER TABLE hooks DROP COLUMN IF EXISTS tz_version, DROP COLUMN IF EXISTS timezone, DROP COLUMN IF EXISTS post_at_local;

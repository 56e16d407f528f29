-- +goose NO TRANSACTION

-- The scheduler's window queues hooks with an ordering key and plain hooks
-- in lanes of their own, so that keys with work left, whose next hooks
-- fall due one after another, do not hold plain hooks behind them
-- (services/scheduler/internal/claim/queue.go; docs/choices.md, "Ordering
-- keys").
--
-- The notification of migration 00006 says which lane: its payload becomes
-- "<hook id> <run_at in Unix microseconds>", followed by " k" for a hook
-- with an ordering key. A scheduler that reads a payload it does not know
-- re-reads the due hooks instead.
--
-- hooks_due_keyed_idx is hooks_due_idx for the keyed hooks alone, so that
-- the prefetch's read of the keyed lane reads only keyed hooks: through
-- hooks_due_idx it would walk every plain hook due within the window to
-- find none. Partial on ordering_key IS NOT NULL, so a hook without an
-- ordering key costs nothing on any write. CONCURRENTLY, as migration
-- 00039, so that upgrading a busy deployment does not block writes.

-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS hooks_due_keyed_idx
    ON hooks (run_at)
    WHERE status IN ('pending', 'retry') AND ordering_key IS NOT NULL;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sundial_notify_due() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sundial_due',
        NEW.id::text || ' ' || (extract(epoch FROM NEW.run_at) * 1000000)::bigint::text
        || CASE WHEN NEW.ordering_key IS NOT NULL THEN ' k' ELSE '' END);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sundial_notify_due() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sundial_due',
        NEW.id::text || ' ' || (extract(epoch FROM NEW.run_at) * 1000000)::bigint::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

DROP INDEX CONCURRENTLY IF EXISTS hooks_due_keyed_idx;

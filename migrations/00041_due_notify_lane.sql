-- The notification of migration 00006 says whether the hook has an
-- ordering key: the scheduler's window queues keyed and plain hooks in
-- lanes of their own, so that keys with work left, whose next hooks fall
-- due one after another, do not hold plain hooks behind them
-- (services/scheduler/internal/claim/queue.go). The payload becomes
-- "<hook id> <run_at in Unix microseconds>", followed by " k" for a hook
-- with an ordering key; a scheduler that reads a payload it does not know
-- re-reads the due hooks instead.

-- +goose Up
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

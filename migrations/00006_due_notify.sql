-- Wakes the schedulers when a hook becomes due soon. A row that is inserted,
-- rescheduled or changes status, and is due (pending or retry) within the
-- next 10 seconds, sends NOTIFY sundial_due with the payload
-- "<hook id> <run_at in Unix microseconds>". The WHEN clause keeps every
-- other write free: a hook due next year costs nothing until the scheduler's
-- prefetch read reaches it. Deletes send nothing: a scheduler's claim by ids
-- skips rows that are gone. Notifications are only a hint; the claim's
-- run_at <= now() decides.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION sundial_notify_due() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sundial_due',
        NEW.id::text || ' ' || (extract(epoch FROM NEW.run_at) * 1000000)::bigint::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER hooks_notify_due
AFTER INSERT OR UPDATE OF run_at, status ON hooks
FOR EACH ROW
WHEN (NEW.status IN ('pending', 'retry') AND NEW.run_at <= now() + interval '10 seconds')
EXECUTE FUNCTION sundial_notify_due();

-- +goose Down
DROP TRIGGER IF EXISTS hooks_notify_due ON hooks;
DROP FUNCTION IF EXISTS sundial_notify_due();

-- The scheduler is the one writer of hook state (docs/architecture.md,
-- "Async answers"): the ack and nack URLs only record the receiver's
-- answer on its attempt, with answer_pending set, and the scheduler applies
-- it (completes, retries or fails the hook) and clears the flag.
--
-- The partial index holds only the answers not yet applied, so the
-- schedulers' fallback sweep (for a notification that was lost) is a read of
-- a handful of rows. Setting the flag sends NOTIFY sundial_async with the
-- hook id in the same transaction, which wakes the schedulers' sweepers at
-- once; the notification is only a hint, the flag decides.

-- +goose Up
ALTER TABLE hook_attempts ADD COLUMN answer_pending boolean NOT NULL DEFAULT false;

CREATE INDEX hook_attempts_answer_pending_idx ON hook_attempts (hook_id) WHERE answer_pending;

-- +goose StatementBegin
CREATE FUNCTION sundial_notify_answer() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sundial_async', NEW.hook_id::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER hook_attempts_notify_answer
AFTER INSERT OR UPDATE OF answer_pending ON hook_attempts
FOR EACH ROW
WHEN (NEW.answer_pending)
EXECUTE FUNCTION sundial_notify_answer();

-- +goose Down
DROP TRIGGER IF EXISTS hook_attempts_notify_answer ON hook_attempts;
DROP FUNCTION IF EXISTS sundial_notify_answer();
DROP INDEX IF EXISTS hook_attempts_answer_pending_idx;
ALTER TABLE hook_attempts DROP COLUMN answer_pending;

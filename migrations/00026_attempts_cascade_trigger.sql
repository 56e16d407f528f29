-- A hook's attempts go with the hook through a statement trigger instead
-- of the foreign key hook_attempts.hook_id -> hooks.id (ON DELETE CASCADE).
-- The foreign key checked every attempt recorded with a query of its own
-- (a KEY SHARE lock on the hook, one per row): a visible share of
-- PostgreSQL's processor time in a burst
-- (docs/benchmarks.md, "Writes per hook"), paid on every attempt, while
-- deletes (a cancel, a deleted hook, retention, a deleted project's
-- cascade) are rare and come in sets.
--
-- What the foreign key guaranteed still holds:
-- - no attempt without its hook: every insert into hook_attempts runs
--   while its hook is locked (the scheduler's result batch holds the
--   hooks FOR UPDATE, LockLeasedHooks and the async locks; the gateway's
--   RecordAnswerBeforeResult takes FOR KEY SHARE, as the foreign key's
--   check did), so a delete waits for the insert to commit, and the
--   trigger's delete, run after it, sees the attempt;
-- - a deleted hook's attempts are deleted in the same statement's end,
--   whatever deleted it (the trigger fires for the cascade from projects
--   too), once per statement over the deleted set: one join, not a query
--   per hook as the cascade ran.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION sundial_delete_hook_attempts() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM hook_attempts AS a USING gone AS g WHERE a.hook_id = g.id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER hooks_delete_attempts
AFTER DELETE ON hooks
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT
EXECUTE FUNCTION sundial_delete_hook_attempts();

ALTER TABLE hook_attempts DROP CONSTRAINT IF EXISTS hook_attempts_hook_id_fkey;

-- +goose Down
DELETE FROM hook_attempts AS a WHERE NOT EXISTS (SELECT 1 FROM hooks AS h WHERE h.id = a.hook_id);
ALTER TABLE hook_attempts ADD CONSTRAINT hook_attempts_hook_id_fkey
    FOREIGN KEY (hook_id) REFERENCES hooks (id) ON DELETE CASCADE;
DROP TRIGGER IF EXISTS hooks_delete_attempts ON hooks;
DROP FUNCTION IF EXISTS sundial_delete_hook_attempts();

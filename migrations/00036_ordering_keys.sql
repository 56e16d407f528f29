-- +goose NO TRANSACTION

-- Ordering keys (docs/choices.md, "Ordering keys"). Hooks of a project
-- that share an ordering_key are delivered one at a time, in order of
-- (post_at, created_at, id): the next waits until the previous has
-- completed or failed for good.
--
-- ordering_keys holds, per key, its head: the one hook of the key that may
-- be leased, retried, held or deferred (active_hook_id). Only the
-- scheduler's claim (ClaimHooks) takes a key, with INSERT ... ON CONFLICT DO
-- UPDATE, whose condition is checked on the row's newest version, so two
-- claims never both take one key. A key is free when it has no head, or its
-- head has finished (no run_at, and no 202 waiting for its answer) or is
-- gone, unless the head failed and the project's
-- ordering_on_failure is 'hold': then the key waits for
-- POST /v1/ordering-keys/{key}/resume, which clears active_hook_id.
--
-- A hook the claim finds behind its key's head is not leased: its run_at
-- moves ahead (a safety recheck), and sundial_wake_ordering_key brings it
-- back when the head finishes: the trigger below calls it for every keyed
-- hook that finishes or is deleted, whatever finished or deleted it, so
-- that no path that ends a hook can forget to. It touches only hook rows,
-- never ordering_keys, so a result's transaction never waits for a claim's
-- key lock (a claim locks hooks, then keys; a result locks hooks only).
--
-- hooks_ordering_idx finds a key's unfinished hooks in order (the claim's
-- "is there an earlier one" and the wake's "which is next"); partial, so a
-- hook without an ordering key costs it nothing. CONCURRENTLY, as migration
-- 00025, outside a transaction for that.

-- +goose Up
ALTER TABLE hooks ADD COLUMN IF NOT EXISTS ordering_key text;
ALTER TABLE projects ADD COLUMN IF NOT EXISTS ordering_on_failure text NOT NULL DEFAULT 'continue'
    CHECK (ordering_on_failure IN ('continue', 'hold'));

CREATE TABLE IF NOT EXISTS ordering_keys (
    project_id     uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key            text NOT NULL,
    active_hook_id uuid,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, key)
);

CREATE INDEX CONCURRENTLY IF NOT EXISTS hooks_ordering_idx
    ON hooks (project_id, ordering_key, post_at, created_at, id)
    WHERE ordering_key IS NOT NULL AND run_at IS NOT NULL;

-- +goose StatementBegin
-- Makes the next unfinished hook of a key due now (or at its postAt, if
-- that is later), unless it is leased. The row is written even when the
-- hook is due already: a claim that read the key before this transaction
-- committed and locks the hook after it tells by the row's new version
-- that what it read may be stale (ClaimHooks, blocked). Called when the
-- key's head finishes or is deleted, and by a resume.
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

-- +goose StatementBegin
-- A keyed hook finished or was deleted: wake its key's next hook, unless
-- the hook failed and its project holds a key on a final failure. A
-- deleted hook wakes only when it was its key's head: deleting one that
-- waits changes nothing for the others.
CREATE OR REPLACE FUNCTION sundial_ordering_key_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF EXISTS (SELECT 1 FROM ordering_keys AS k
                   WHERE k.project_id = OLD.project_id AND k.key = OLD.ordering_key
                     AND k.active_hook_id = OLD.id) THEN
            PERFORM sundial_wake_ordering_key(OLD.project_id, OLD.ordering_key);
        END IF;
        RETURN NULL;
    END IF;
    IF NEW.status = 'failed' AND EXISTS (SELECT 1 FROM projects AS p
                                         WHERE p.id = NEW.project_id AND p.ordering_on_failure = 'hold') THEN
        RETURN NULL;
    END IF;
    PERFORM sundial_wake_ordering_key(NEW.project_id, NEW.ordering_key);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

DROP TRIGGER IF EXISTS hooks_ordering_key_finished ON hooks;
-- A hook is unfinished while it has a run_at or waits for its 202's answer
-- (async_deadline, with no run_at): a head that answered 202 keeps its key
-- until the answer, or its timeout, settles it.
CREATE TRIGGER hooks_ordering_key_finished
AFTER UPDATE OF run_at, async_deadline ON hooks
FOR EACH ROW
WHEN (OLD.ordering_key IS NOT NULL
      AND (OLD.run_at IS NOT NULL OR OLD.async_deadline IS NOT NULL)
      AND NEW.run_at IS NULL AND NEW.async_deadline IS NULL)
EXECUTE FUNCTION sundial_ordering_key_ended();

DROP TRIGGER IF EXISTS hooks_ordering_key_deleted ON hooks;
CREATE TRIGGER hooks_ordering_key_deleted
AFTER DELETE ON hooks
FOR EACH ROW
WHEN (OLD.ordering_key IS NOT NULL)
EXECUTE FUNCTION sundial_ordering_key_ended();

-- +goose Down
DROP TRIGGER IF EXISTS hooks_ordering_key_deleted ON hooks;
DROP TRIGGER IF EXISTS hooks_ordering_key_finished ON hooks;
DROP FUNCTION IF EXISTS sundial_ordering_key_ended();
DROP FUNCTION IF EXISTS sundial_wake_ordering_key(uuid, text);
DROP INDEX CONCURRENTLY IF EXISTS hooks_ordering_idx;
DROP TABLE IF EXISTS ordering_keys;
ALTER TABLE projects DROP COLUMN IF EXISTS ordering_on_failure;
ALTER TABLE hooks DROP COLUMN IF EXISTS ordering_key;

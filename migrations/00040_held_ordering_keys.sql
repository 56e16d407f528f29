-- held_ordering_keys: the keys a project holds (docs/choices.md, "Ordering
-- keys"), said once for every statement that lists, counts or releases
-- them. A key is held when its head (ordering_keys.active_hook_id) failed
-- for good and its project's ordering_on_failure is 'hold'; such a key
-- waits for a resume, or for the project's change to 'continue'. The
-- scheduler's claim asks the wider question "does the head still hold its
-- key" (unfinished, or held) on the key row's newest version, inside its
-- ON CONFLICT, and keeps its own words for it.
--
-- A plain view: PostgreSQL inlines it into each statement, so a read of
-- one project's keys is the same index scan of ordering_keys' primary key
-- it was when each statement wrote the joins out. PostgreSQL refuses to
-- change the type of a column a view reads: a later migration that changes
-- one of these (ordering_keys', projects.ordering_on_failure, hooks.id,
-- project_id or status) drops the view first and creates it again.

-- +goose Up
CREATE OR REPLACE VIEW held_ordering_keys AS
SELECT k.project_id, k.key, k.active_hook_id, k.updated_at
FROM ordering_keys AS k
JOIN projects AS p ON p.id = k.project_id
JOIN hooks AS h ON h.id = k.active_hook_id AND h.project_id = k.project_id
WHERE p.ordering_on_failure = 'hold'
  AND h.status = 'failed';

-- +goose Down
DROP VIEW IF EXISTS held_ordering_keys;

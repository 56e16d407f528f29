-- Runs written ahead of their slot (docs/sequences.md, "Runs written ahead
-- of their slot"). The scheduler records a sequence's next run, and creates
-- its root steps' hooks due at the slot, up to a minute before the slot, so
-- that at the slot those hooks are delivered as plain hooks are, at the
-- burst rate, instead of waiting for every run of that instant to be
-- written first.
--
-- revision counts the gateway's changes to a sequence's definition or
-- state (replace, pause, resume): a run written ahead under an older
-- revision than the sequence now has is withdrawn by the scheduler before
-- its slot (its unclaimed hooks deleted, their count given back), and
-- written again by the new definition if the sequence still has that slot.
--
-- prepared_slot is the slot of the run written ahead, kept until that slot
-- has passed (then it folds into last_run_at); prepared_revision is the
-- revision it was written under.

-- +goose Up
ALTER TABLE sequences
    ADD COLUMN revision bigint NOT NULL DEFAULT 0,
    ADD COLUMN prepared_slot timestamptz,
    ADD COLUMN prepared_revision bigint;
-- The scheduler's look for runs written ahead under an older revision: a
-- change made in the last minute before a slot, so nearly always empty.
CREATE INDEX sequences_prepared_stale_idx ON sequences (id)
    WHERE prepared_slot IS NOT NULL AND prepared_revision <> revision;

-- +goose Down
DROP INDEX IF EXISTS sequences_prepared_stale_idx;
ALTER TABLE sequences
    DROP COLUMN prepared_revision,
    DROP COLUMN prepared_slot,
    DROP COLUMN revision;

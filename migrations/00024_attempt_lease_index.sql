-- +goose NO TRANSACTION

-- hook_attempts_lease_idx (hook_id, lease_seq), from 00007, is dropped: the
-- one read that looks an attempt up by its lease (an async answer's
-- AttemptOfLease) finds the hook's few attempts by the primary key's
-- leading hook_id just as well (a hook has at most its retries and
-- re-drives of them), while every attempt recorded paid for a second index
-- entry, a visible share of the cost of recording it
-- (docs/benchmarks.md, "Writes per hook"). CONCURRENTLY so that upgrading
-- a busy deployment does not block the scheduler's inserts.

-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS hook_attempts_lease_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS hook_attempts_lease_idx ON hook_attempts (hook_id, lease_seq);

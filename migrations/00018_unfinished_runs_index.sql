-- +goose NO TRANSACTION

-- The overlap check's index, restated so that only the queries that ask for
-- it can use it. sequence_runs_running_idx (WHERE status = 'running') was
-- also usable by every statement that reads runs by id and checks that they
-- are running (the runs a batch inserted or locked): during a burst of runs
-- the table's statistics still say that few runs are running (they were
-- gathered before it), so PostgreSQL preferred a scan of that index,
-- estimated at 2 rows, to the primary key, and walked every running run for
-- each batch of 100: a burst of N runs cost N^2
-- (docs/benchmarks.md, "Sequences"). A running run is never finished
-- (finished_at is set with its final status), so the added condition
-- selects the same rows, and a statement that does not state it cannot use
-- the index.

-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS sequence_runs_unfinished_idx;
CREATE INDEX CONCURRENTLY sequence_runs_unfinished_idx ON sequence_runs (sequence_id)
    WHERE status = 'running' AND finished_at IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS sequence_runs_running_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS sequence_runs_running_idx ON sequence_runs (sequence_id) WHERE status = 'running';
DROP INDEX CONCURRENTLY IF EXISTS sequence_runs_unfinished_idx;

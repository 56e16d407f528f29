-- Statements the benchmark runs itself, outside the services' stores: each
-- follows a "-- name:" line. {{db}} is replaced by a quoted database name
-- (an identifier cannot be a parameter).

-- name: create-database
CREATE DATABASE {{db}};

-- name: drop-database
DROP DATABASE IF EXISTS {{db}} WITH (FORCE);

-- name: skip-triggers
-- The backlog's COPY skips the row triggers (the projects foreign key check
-- and the due notification, which a hook due next year never sends); only
-- a superuser may, and the load goes on with them otherwise.
SET session_replication_role = replica;

-- name: analyze-hooks
-- After the backlog's COPY, so the planner knows the table's new size.
ANALYZE hooks;

-- name: checkpoint
-- After a backlog load, for both systems: the load leaves gigabytes of WAL
-- and dirty pages, and the checkpoint it triggers otherwise writes them
-- back during the first tens of seconds of the measurement (PostgreSQL's
-- log showed one spread over 44 s of a 60 s run). A table that has been
-- large for a while has none of that.
CHECKPOINT;

-- name: database-stats
-- Transactions and row operations of the benchmark's database so far, to
-- count database round trips per delivered hook.
SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_fetched
FROM pg_stat_database
WHERE datname = current_database();

-- name: other-backends
-- Connections to the benchmark's database besides this one: once the
-- services' are gone, their counters have been published (a backend
-- publishes them before it leaves pg_stat_activity).
SELECT count(*)
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid();

-- name: clone-sequences
-- The sequences scenarios' bulk load: $2 copies of one sequence the API
-- created ($1), each with its own name and a UUIDv7 id of now whose last
-- bytes are the copy's number (as the hooks backlog's ids), and everything
-- else as the API wrote it: schedule, steps, bounds, policies, status and
-- the next_run_at the gateway planned. created_at and updated_at are now(),
-- as for a create.
INSERT INTO sequences (id, project_id, name, schedule, steps, start_at, end_at, catch_up, overlap,
                       status, next_run_at, last_run_at, created_at, updated_at)
SELECT (lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0')
        || '7000' || '8' || lpad(to_hex(n), 15, '0'))::uuid,
       t.project_id, t.name || '-' || n, t.schedule, t.steps, t.start_at, t.end_at, t.catch_up,
       t.overlap, t.status, t.next_run_at, t.last_run_at, now(), now()
FROM sequences AS t, generate_series(1, $2::integer) AS n
WHERE t.id = $1;

-- name: analyze-sequences
-- After a bulk load of sequences, so the planner knows the table's size.
ANALYZE sequences;

-- name: slot-runs
-- How many scheduled runs of the slot $1 exist: the sequences scenario
-- polls it.
SELECT count(*)::int
FROM sequence_runs
WHERE slot = $1 AND trigger = 'schedule';

-- name: slot-run-hooks
-- The root step hooks of the runs of the slot $1, with when each run
-- started (the transaction that created the hook).
SELECT st.hook_id, r.started_at
FROM sequence_runs AS r
JOIN sequence_run_steps AS st ON st.run_id = r.id
WHERE r.slot = $1 AND r.trigger = 'schedule' AND st.hook_id IS NOT NULL;

-- name: listener-presence
-- Whether a project is listening (a gateway's row connected and seen within
-- the last 30 s, as the scheduler's claim decides: docs/listener.md) and
-- how many sockets its connected rows count: the listen scenario waits on
-- it before it schedules hooks for the listener.
SELECT coalesce(bool_or(connected AND seen_at > now() - interval '30 seconds'), false),
       coalesce(sum(sockets) FILTER (WHERE connected), 0)::int
FROM listener_presence
WHERE project_id = $1;

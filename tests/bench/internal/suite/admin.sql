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

-- name: listener-presence
-- Whether a project is listening (a gateway's row connected and seen within
-- the last 30 s, as the scheduler's claim decides: docs/listener.md) and
-- how many sockets its connected rows count: the listen scenario waits on
-- it before it schedules hooks for the listener.
SELECT coalesce(bool_or(connected AND seen_at > now() - interval '30 seconds'), false),
       coalesce(sum(sockets) FILTER (WHERE connected), 0)::int
FROM listener_presence
WHERE project_id = $1;

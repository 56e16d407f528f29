-- Statements the baseline runs itself, outside river: each follows a
-- "-- name:" line. {{db}} is replaced by a quoted database name (an
-- identifier cannot be a parameter).

-- name: create-database
CREATE DATABASE {{db}};

-- name: drop-database
DROP DATABASE IF EXISTS {{db}} WITH (FORCE);

-- name: analyze-jobs
-- After a backlog load, so the planner knows river_job's new size.
ANALYZE river_job;

-- name: count-scheduled
-- Jobs waiting for their instant: the tests' check of a backlog load.
SELECT count(*) FROM river_job WHERE state = 'scheduled';

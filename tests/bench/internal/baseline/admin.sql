-- Statements the baseline runs itself, outside river: each follows a
-- "-- name:" line. (Its database is made and dropped by internal/suite.)

-- name: analyze-jobs
-- After a backlog load, so the planner knows river_job's new size.
ANALYZE river_job;

-- name: count-scheduled
-- Jobs waiting for their instant: the tests' check of a backlog load.
SELECT count(*) FROM river_job WHERE state = 'scheduled';

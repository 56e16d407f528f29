-- Sequences (migration 00016): the definitions and trigger requests the
-- gateway writes in production, and reads of the runs, steps and hooks the
-- scheduler wrote.

-- name: InsertSequenceForTest :one
-- An active sequence whose next slot is its startAt, start_in_seconds from
-- the database's now (negative: in the past, as if the scheduler had been
-- down since); end_in_seconds NULL for no end.
INSERT INTO sequences (id, project_id, name, schedule, steps, start_at, end_at, catch_up, overlap, next_run_at)
VALUES (
    sqlc.arg(id), sqlc.arg(project_id), sqlc.arg(name), sqlc.arg(schedule), sqlc.arg(steps),
    now() + make_interval(secs => sqlc.arg(start_in_seconds)::float8),
    now() + make_interval(secs => sqlc.narg(end_in_seconds)::float8),
    sqlc.arg(catch_up), sqlc.arg(overlap),
    now() + make_interval(secs => sqlc.arg(start_in_seconds)::float8)
)
RETURNING *;

-- name: GetSequenceForTest :one
SELECT * FROM sequences WHERE id = sqlc.arg(id);

-- name: ReplaceStepsForTest :execrows
-- What the gateway's PUT does to the steps (the schedule kept).
UPDATE sequences SET steps = sqlc.arg(steps), updated_at = now() WHERE id = sqlc.arg(id);

-- name: InsertRunForTest :exec
-- A run as the scheduler records it, with no steps: an unfinished one
-- makes the overlap rule apply.
INSERT INTO sequence_runs (id, project_id, sequence_id, slot, trigger, status)
VALUES (sqlc.arg(id), sqlc.arg(project_id), sqlc.arg(sequence_id), sqlc.arg(slot), 'schedule', 'running');

-- name: ListRunsForTest :many
SELECT * FROM sequence_runs WHERE sequence_id = sqlc.arg(sequence_id) ORDER BY slot, id;

-- name: GetRunForTest :one
SELECT * FROM sequence_runs WHERE id = sqlc.arg(id);

-- name: ListRunStepsForTest :many
SELECT * FROM sequence_run_steps WHERE run_id = sqlc.arg(run_id) ORDER BY name;

-- name: ListRunHooksForTest :many
SELECT * FROM hooks WHERE sequence_run_id = sqlc.arg(run_id) ORDER BY sequence_step;

-- name: InsertTriggerForTest :exec
-- What POST /v1/sequences/{id}/trigger writes.
INSERT INTO sequence_triggers (run_id, project_id, sequence_id)
VALUES (sqlc.arg(run_id), sqlc.arg(project_id), sqlc.arg(sequence_id));

-- name: CountTriggersForTest :one
SELECT count(*) FROM sequence_triggers;

-- name: SetPlanForTest :execrows
-- A project's plan and its usage in the current period.
WITH plan AS (
    UPDATE projects SET plan_quota = sqlc.arg(plan_quota), plan_hard_cap_percent = 100
    WHERE id = sqlc.arg(project_id)
    RETURNING id
)
INSERT INTO usage_periods (project_id, period_start, period_end, hooks_created)
SELECT plan.id,
       date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
       (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC',
       sqlc.arg(hooks_created)::bigint
FROM plan
ON CONFLICT (project_id, period_start) DO UPDATE SET hooks_created = EXCLUDED.hooks_created;

-- name: UsedForTest :one
SELECT COALESCE(sum(hooks_created), 0)::bigint FROM usage_periods WHERE project_id = sqlc.arg(project_id);

-- name: RewindSequenceForTest :execrows
-- Puts a sequence back at its first slot, as a scheduler that read it
-- before another advanced it would see it.
UPDATE sequences SET next_run_at = start_at WHERE id = sqlc.arg(id);

-- name: InsertDueSequencesForTest :exec
-- count copies of a sequence whose first slot, slot, is due: a burst.
INSERT INTO sequences (id, project_id, name, schedule, steps, start_at, catch_up, overlap, next_run_at)
SELECT gen_random_uuid(), sqlc.arg(project_id), 'burst-' || g, sqlc.arg(schedule), sqlc.arg(steps),
    sqlc.arg(slot)::timestamptz, 'latest', 'allow', sqlc.arg(slot)::timestamptz
FROM generate_series(1, sqlc.arg(count)::integer) AS g;

-- name: RunsAnalyzedForTest :one
-- Whether sequence_runs has been analyzed, by anyone.
SELECT (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)::boolean AS analyzed
FROM pg_catalog.pg_stat_user_tables WHERE relname = 'sequence_runs';

-- name: AlertedThresholdsForTest :one
-- The usage thresholds claimed in the project's current period.
SELECT alerted_thresholds FROM usage_periods
WHERE project_id = sqlc.arg(project_id)
  AND period_start = date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';

-- name: ReviseSequenceForTest :execrows
-- What the gateway's PUT does: new steps, planned again from the first slot
-- at or after now (here the start, in the future), a new revision.
UPDATE sequences
SET steps = sqlc.arg(steps), next_run_at = start_at, revision = revision + 1, updated_at = now()
WHERE id = sqlc.arg(id);

-- name: PauseSequenceForTest :execrows
-- What the gateway's pause does.
UPDATE sequences
SET status = 'paused', next_run_at = NULL, revision = revision + 1, updated_at = now()
WHERE id = sqlc.arg(id) AND status = 'active';

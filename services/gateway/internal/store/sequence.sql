-- Sequences (internal/sequence): the gateway writes a sequence's
-- definition (create, replace, pause, resume, delete) and plans its next
-- slot (with tz_version, the tz database release it planned with); it
-- records trigger requests, and reads runs. Runs, their steps and
-- their hooks are the scheduler's (docs/sequences.md, "Who writes what").
-- Every query is scoped by the caller's project. Plans use the database's
-- clock (DatabaseNow, gateway.sql), which decides when anything is due.

-- name: InsertSequence :one
-- A name already used in the project inserts nothing (no row: a conflict).
INSERT INTO sequences (id, project_id, name, schedule, steps, start_at, end_at, catch_up, overlap, status, next_run_at,
    tz_version)
VALUES (@id, @project_id, @name, @schedule, @steps, @start_at, sqlc.narg(end_at), @catch_up, @overlap, @status, sqlc.narg(next_run_at),
    @tz_version)
ON CONFLICT (project_id, name) DO NOTHING
RETURNING *;

-- name: GetSequence :one
SELECT * FROM sequences WHERE project_id = @project_id AND id = @id;

-- name: GetSequenceAtNow :one
-- A sequence and the database's clock, in one read (GET .../preview).
SELECT sqlc.embed(sequences), now()::timestamptz AS db_now
FROM sequences
WHERE project_id = @project_id AND id = @id;

-- name: LockSequence :one
-- The sequence to re-plan; the scheduler's scan locks the same row, so a
-- plan and a scan never interleave.
SELECT * FROM sequences WHERE project_id = @project_id AND id = @id FOR UPDATE;

-- name: ReplaceSequence :one
UPDATE sequences
SET name        = @name,
    schedule    = @schedule,
    steps       = @steps,
    start_at    = @start_at,
    end_at      = sqlc.narg(end_at),
    catch_up    = @catch_up,
    overlap     = @overlap,
    status      = @status,
    next_run_at = sqlc.narg(next_run_at),
    tz_version  = @tz_version,
    revision    = revision + 1,
    updated_at  = now()
WHERE project_id = @project_id AND id = @id
RETURNING *;

-- name: PlanSequence :one
-- Resume: the status and next slot the gateway planned.
UPDATE sequences
SET status      = @status,
    next_run_at = sqlc.narg(next_run_at),
    tz_version  = @tz_version,
    revision    = revision + 1,
    updated_at  = now()
WHERE project_id = @project_id AND id = @id
RETURNING *;

-- name: PauseSequence :execrows
-- Pausing an active sequence drops its next slot: slots passed while
-- paused never run. A paused or ended sequence is left as it is.
-- Replace, resume and pause count a revision: the scheduler withdraws a run
-- it wrote ahead of its slot under an older one (migration 00021).
UPDATE sequences
SET status = 'paused', next_run_at = NULL, revision = revision + 1, updated_at = now()
WHERE project_id = @project_id AND id = @id AND status = 'active';

-- name: DeleteSequence :execrows
-- Runs, their steps and trigger requests go with it (ON DELETE CASCADE);
-- its hooks are cancelled by bulk cancel afterwards.
DELETE FROM sequences WHERE project_id = @project_id AND id = @id;

-- name: ListSequences :many
-- Newest first, strictly after the cursor's (created_at, id); the first
-- page passes 'infinity' and the greatest id.
SELECT * FROM sequences
WHERE project_id = @project_id
  AND (created_at, id) < (@before_created_at::timestamptz, @before_id::uuid)
ORDER BY created_at DESC, id DESC
LIMIT @max_rows::integer;

-- name: CountSequences :one
SELECT count(*) FROM (
    SELECT 1 FROM sequences WHERE project_id = @project_id LIMIT @max_count::integer
) AS capped;

-- name: SequenceExists :one
SELECT EXISTS (SELECT 1 FROM sequences WHERE project_id = @project_id AND id = @id);

-- name: InsertSequenceTrigger :one
-- A run now, outside the schedule: the scheduler turns the request into a
-- run with this id. Another project's sequence inserts nothing.
INSERT INTO sequence_triggers (run_id, project_id, sequence_id)
SELECT @run_id::uuid, s.project_id, s.id
FROM sequences AS s
WHERE s.project_id = @project_id AND s.id = @sequence_id
RETURNING requested_at;

-- name: ListSequenceRuns :many
-- Newest slot first, strictly after the cursor's (slot, id). A run the
-- scheduler wrote ahead of its slot (migration 00021) starts at its slot
-- and is listed from then on: until then the sequence shows the slot as
-- its nextRunAt.
SELECT * FROM sequence_runs
WHERE project_id = @project_id AND sequence_id = @sequence_id
  AND started_at <= now()
  AND (slot, id) < (@before_slot::timestamptz, @before_id::uuid)
ORDER BY slot DESC, id DESC
LIMIT @max_rows::integer;

-- name: CountSequenceRuns :one
SELECT count(*) FROM (
    SELECT 1 FROM sequence_runs
    WHERE project_id = @project_id AND sequence_id = @sequence_id AND started_at <= now()
    LIMIT @max_count::integer
) AS capped;

-- name: ListSequenceRunSteps :many
SELECT st.run_id, st.name, st.hook_id, st.status
FROM sequence_run_steps AS st
JOIN sequence_runs AS r ON r.id = st.run_id
WHERE r.project_id = @project_id AND st.run_id = ANY(@run_ids::uuid[])
ORDER BY st.run_id, st.name;

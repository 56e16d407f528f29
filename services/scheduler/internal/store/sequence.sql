-- Sequences (migration 00016, docs/sequences.md "Who writes what"): the
-- scheduler is the only writer of runs, of their steps, of the hooks they
-- create and of a sequence's progress. Package sequencer starts runs
-- (ClaimDueSequences, ClaimSequenceTriggers, InsertSequenceRuns,
-- AdvanceSequences); package runstep moves their steps on, from the
-- sequencer's transactions and from the result applier's. Arrays are
-- parallel: element i of each describes one row.

-- name: ClaimDueSequences :many
-- Locks up to batch_size active sequences whose next slot is due by the
-- database clock, oldest slot first (the partial index sequences_due_idx).
-- SKIP LOCKED: a sequence another scheduler (or the gateway's replace,
-- pause or delete) holds is left to it, and is found again by the next scan
-- if still due. running says whether a run of the sequence is unfinished
-- (the overlap rule); db_now is the clock the due slots are computed by.
-- running is a LATERAL lookup with LIMIT 1, which PostgreSQL runs once per
-- claimed sequence on the partial index of unfinished runs (migration
-- 00018: it states both of that index's conditions): as a plain EXISTS it
-- was planned, with statistics from before a burst, as a hashed subplan
-- over the whole index, which after a burst of runs walked every entry of
-- the runs finished and not yet vacuumed at every claim, a burst quadratic
-- in its size (docs/benchmarks.md, "Sequences").
SELECT s.id, s.project_id, s.schedule, s.start_at, s.end_at, s.catch_up, s.overlap,
    s.next_run_at::timestamptz AS next_run_at,
    (run.one IS NOT NULL)::boolean AS running,
    now()::timestamptz AS db_now
FROM sequences AS s
LEFT JOIN LATERAL (
    SELECT 1 AS one FROM sequence_runs AS r
    WHERE r.sequence_id = s.id AND r.status = 'running' AND r.finished_at IS NULL
      AND r.started_at <= now()
    LIMIT 1
) AS run ON true
WHERE s.status = 'active' AND s.next_run_at IS NOT NULL AND s.next_run_at <= now()
ORDER BY s.next_run_at
LIMIT sqlc.arg(batch_size)::integer
FOR UPDATE OF s SKIP LOCKED;

-- name: AdvanceSequences :exec
-- Moves the claimed sequences past the slots their scan handled: next_run_at
-- to the next slot, or, where ends[i], the sequence is over (status ended,
-- no next slot); last_run_at to the latest slot that got a run, where
-- recorded[i]. updated_at is the definition's and is left alone. A run
-- written ahead whose slot has passed folds into last_run_at (GREATEST
-- leaves NULLs out); one whose slot is still to come (written under an
-- older revision, waiting to be withdrawn) is left for the withdrawal.
UPDATE sequences AS s
SET next_run_at   = CASE WHEN u.ended THEN NULL ELSE u.next_run_at END,
    status        = CASE WHEN u.ended THEN 'ended' ELSE s.status END,
    last_run_at   = GREATEST(CASE WHEN u.recorded THEN u.last_run_at ELSE s.last_run_at END,
                             CASE WHEN s.prepared_slot <= now() THEN s.prepared_slot END),
    prepared_slot = CASE WHEN s.prepared_slot <= now() THEN NULL ELSE s.prepared_slot END
FROM (
    SELECT unnest(sqlc.arg(ids)::uuid[]) AS id,
        unnest(sqlc.arg(next_run_ats)::timestamptz[]) AS next_run_at,
        unnest(sqlc.arg(ends)::boolean[]) AS ended,
        unnest(sqlc.arg(last_run_ats)::timestamptz[]) AS last_run_at,
        unnest(sqlc.arg(recorded)::boolean[]) AS recorded
) AS u
WHERE s.id = u.id;

-- name: ClaimSequencesToPrepare :many
-- Locks up to batch_size active sequences whose next slot comes within
-- lead_seconds by the database clock, soonest first, to write that slot's
-- run ahead (docs/sequences.md, "Runs written ahead of their slot"): only
-- with overlap allow (whether a previous run has finished is known only at
-- the slot), and only when no run written ahead is still waiting for its
-- slot (a sequence has at most one). The lead is under a minute, the
-- shortest interval between two slots, so a sequence is in the scanned
-- range only while its next slot is not yet written. SKIP LOCKED as in
-- ClaimDueSequences.
SELECT s.id, s.project_id, s.schedule, s.start_at, s.end_at,
    s.next_run_at::timestamptz AS next_run_at
FROM sequences AS s
WHERE s.status = 'active' AND s.next_run_at IS NOT NULL
  AND s.next_run_at > now()
  AND s.next_run_at <= now() + make_interval(secs => sqlc.arg(lead_seconds)::float8)
  AND s.overlap = 'allow'
  AND (s.prepared_slot IS NULL OR s.prepared_slot <= now())
ORDER BY s.next_run_at
LIMIT sqlc.arg(batch_size)::integer
FOR UPDATE OF s SKIP LOCKED;

-- name: PrepareSequences :exec
-- Records that the claimed sequences' next runs are written (slots[i], under
-- the sequence's current revision) and moves them to the slot after
-- (next_run_ats[i]); where lasts[i] there is none, and next_run_at stays at
-- the slot, so that the due scan ends the sequence once the slot has come
-- (its run is there already: InsertSequenceRuns leaves it). A run written
-- ahead before, whose slot has passed, folds into last_run_at.
UPDATE sequences AS s
SET next_run_at       = CASE WHEN u.last THEN s.next_run_at ELSE u.next_run_at END,
    last_run_at       = GREATEST(s.last_run_at, s.prepared_slot),
    prepared_slot     = u.slot,
    prepared_revision = s.revision
FROM (
    SELECT unnest(sqlc.arg(ids)::uuid[]) AS id,
        unnest(sqlc.arg(slots)::timestamptz[]) AS slot,
        unnest(sqlc.arg(next_run_ats)::timestamptz[]) AS next_run_at,
        unnest(sqlc.arg(lasts)::boolean[]) AS last
) AS u
WHERE s.id = u.id;

-- name: ClaimStalePreparedSequences :many
-- Locks up to batch_size sequences whose run written ahead was written
-- under an older revision than the sequence has now (the gateway replaced,
-- paused or resumed it since: sequences_prepared_stale_idx). ORDER BY id
-- makes PostgreSQL read that index: without it, it estimated nearly every
-- sequence written ahead stale (a comparison of two columns it cannot
-- judge) and scanned the whole table for the LIMIT, every second, for
-- nothing found; in id order it reads only the stale entries.
SELECT s.id, s.prepared_slot::timestamptz AS prepared_slot
FROM sequences AS s
WHERE s.prepared_slot IS NOT NULL AND s.prepared_revision <> s.revision
ORDER BY s.id
LIMIT sqlc.arg(batch_size)::integer
FOR UPDATE OF s SKIP LOCKED;

-- name: LockPreparedRunHooks :many
-- The step hooks of the claimed sequences' runs written ahead whose slot
-- is still to come, locked: a claim of the scheduler's delivery path that
-- holds one is waited for. unclaimed says that the hook is pending and was
-- never leased nor attempted; a run with any other hook (leased: its run
-- has begun; failed on the hard cap: the run is over) stays. A step with
-- no hook yet is returned with a nil hook id.
SELECT r.id AS run_id, r.sequence_id,
    COALESCE(h.id, '00000000-0000-0000-0000-000000000000'::uuid)::uuid AS hook_id,
    COALESCE(h.unclaimed, true)::boolean AS unclaimed
FROM sequence_runs AS r
JOIN (
    SELECT unnest(sqlc.arg(sequence_ids)::uuid[]) AS sequence_id,
        unnest(sqlc.arg(slots)::timestamptz[]) AS slot
) AS u ON r.sequence_id = u.sequence_id AND r.slot = u.slot
JOIN sequence_run_steps AS st ON st.run_id = r.id
LEFT JOIN LATERAL (
    SELECT x.id, (x.status = 'pending' AND x.lease_expires_at IS NULL AND x.attempts = 0) AS unclaimed
    FROM hooks AS x
    WHERE x.id = st.hook_id
    FOR UPDATE
) AS h ON true
WHERE r.trigger = 'schedule' AND r.slot > now()
ORDER BY r.id, st.name
FOR UPDATE OF r;

-- name: WithdrawPreparedRuns :exec
-- Deletes runs written ahead (their steps go with them) and their step
-- hooks, none of which was leased: the hooks never left the database.
-- A pending one was counted in its project's period (the period of its
-- creation) and is counted out; one that failed on the hard cap never was.
WITH gone AS (
    DELETE FROM hooks AS h
    WHERE h.id = ANY(sqlc.arg(hook_ids)::uuid[])
    RETURNING h.project_id, h.created_at, h.status
), counted AS (
    UPDATE usage_periods AS p
    SET hooks_created = GREATEST(p.hooks_created - c.hooks, 0)
    FROM (
        SELECT gone.project_id,
            date_trunc('month', gone.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS period_start,
            count(*) AS hooks
        FROM gone WHERE gone.status = 'pending'
        GROUP BY 1, 2
    ) AS c
    WHERE p.project_id = c.project_id AND p.period_start = c.period_start
)
DELETE FROM sequence_runs AS r WHERE r.id = ANY(sqlc.arg(run_ids)::uuid[]);

-- name: ClearPreparedSlots :exec
-- The claimed sequences' runs written ahead are withdrawn or, where
-- kept[i] (their slot had come), stay and fold into last_run_at.
UPDATE sequences AS s
SET last_run_at       = GREATEST(s.last_run_at, CASE WHEN u.kept THEN s.prepared_slot END),
    prepared_slot     = NULL,
    prepared_revision = NULL
FROM (
    SELECT unnest(sqlc.arg(ids)::uuid[]) AS id,
        unnest(sqlc.arg(kept)::boolean[]) AS kept
) AS u
WHERE s.id = u.id;

-- name: ClaimSequenceTriggers :many
-- Locks up to batch_size trigger requests, oldest first; SKIP LOCKED leaves
-- those another scheduler is consuming to it. The caller creates their runs
-- and deletes them (DeleteSequenceTriggers) in the same transaction.
SELECT t.run_id, t.project_id, t.sequence_id, t.requested_at
FROM sequence_triggers AS t
ORDER BY t.requested_at
LIMIT sqlc.arg(batch_size)::integer
FOR UPDATE SKIP LOCKED;

-- name: DeleteSequenceTriggers :exec
DELETE FROM sequence_triggers WHERE run_id = ANY(sqlc.arg(run_ids)::uuid[]);

-- name: InsertSequenceRuns :many
-- Records runs (statuses[i] running or skipped; skip_reasons[i] empty
-- unless skipped), started at their slot or now, whichever is later (a run
-- written ahead starts at its slot), with their steps: every step of the sequence's current
-- definition, waiting in a running run (runstep.Advance starts those whose
-- dependencies are met), skipped in a skipped one. A slot that already has
-- its run (another scheduler got there first: the unique index
-- sequence_runs_slot_idx), or a run id already used, is not inserted and
-- not returned, so nothing is recorded twice.
-- The gateway validates the steps; a definition it would refuse (not an
-- array, a step without a name, a name twice) still records a run, with the
-- steps that can be read, rather than failing the batch at every scan.
WITH run AS (
    INSERT INTO sequence_runs (id, project_id, sequence_id, slot, trigger, status, skip_reason, started_at)
    SELECT u.id, u.project_id, u.sequence_id, u.slot, u.trigger, u.status, NULLIF(u.skip_reason, ''),
        GREATEST(now(), u.slot)
    FROM (
        SELECT unnest(sqlc.arg(ids)::uuid[]) AS id,
            unnest(sqlc.arg(project_ids)::uuid[]) AS project_id,
            unnest(sqlc.arg(sequence_ids)::uuid[]) AS sequence_id,
            unnest(sqlc.arg(slots)::timestamptz[]) AS slot,
            unnest(sqlc.arg(triggers)::text[]) AS trigger,
            unnest(sqlc.arg(statuses)::text[]) AS status,
            unnest(sqlc.arg(skip_reasons)::text[]) AS skip_reason
    ) AS u
    ON CONFLICT DO NOTHING
    RETURNING id, sequence_id, status
), step AS (
    INSERT INTO sequence_run_steps (run_id, name, depends_on, status)
    SELECT run.id, e.step ->> 'name',
        ARRAY(SELECT jsonb_array_elements_text(CASE WHEN jsonb_typeof(e.step -> 'dependsOn') = 'array'
                                                    THEN e.step -> 'dependsOn' ELSE '[]'::jsonb END)),
        CASE WHEN run.status = 'skipped' THEN 'skipped' ELSE 'waiting' END
    FROM run
    JOIN sequences AS s ON s.id = run.sequence_id
    CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(s.steps) = 'array' THEN s.steps ELSE '[]'::jsonb END) AS e(step)
    WHERE e.step ->> 'name' IS NOT NULL
    ON CONFLICT DO NOTHING
)
SELECT run.id, run.status FROM run;

-- name: LockSequenceRuns :many
-- Locks the given runs that are still running, in id order, so that two
-- transactions finishing steps of one run apply one after the other (each
-- then sees the other's steps) and never deadlock.
SELECT r.id FROM sequence_runs AS r
WHERE r.id = ANY(sqlc.arg(ids)::uuid[]) AND r.status = 'running'
ORDER BY r.id
FOR UPDATE;

-- name: FinishSequenceSteps :many
-- The hooks of pending steps reached their final status (statuses[i]:
-- completed or failed): their steps take it. Returns the runs of those
-- steps that have a waiting step (read before this statement's own
-- changes, which turn pending steps final and touch no waiting one): only
-- those can start or skip a step now (runstep.Finish); every run of
-- single-step sequences, or whose last steps just finished, is left out.
WITH done AS (
    UPDATE sequence_run_steps AS s
    SET status = u.status
    FROM (
        SELECT unnest(sqlc.arg(hook_ids)::uuid[]) AS hook_id,
            unnest(sqlc.arg(statuses)::text[]) AS status
    ) AS u
    WHERE s.hook_id = u.hook_id AND s.status = 'pending'
    RETURNING s.run_id
)
SELECT DISTINCT done.run_id
FROM done
WHERE EXISTS (SELECT 1 FROM sequence_run_steps AS w WHERE w.run_id = done.run_id AND w.status = 'waiting');

-- name: LockVanishedSequenceSteps :many
-- Pending steps whose hook is gone (cancelled or deleted through the API,
-- which deletes the row), with their runs locked: such a step counts as
-- failed. Found through the unfinished runs (sequence_runs_unfinished_idx), at
-- most max_steps of them; SKIP LOCKED leaves a run another transaction is
-- advancing to it.
SELECT s.run_id, s.hook_id::uuid AS hook_id
FROM sequence_runs AS r
JOIN sequence_run_steps AS s ON s.run_id = r.id
WHERE r.status = 'running' AND r.finished_at IS NULL AND s.status = 'pending'
  AND NOT EXISTS (SELECT 1 FROM hooks AS h WHERE h.id = s.hook_id)
ORDER BY r.id
LIMIT sqlc.arg(max_steps)::integer
FOR UPDATE OF r SKIP LOCKED;

-- name: ReadySequenceSteps :many
-- The waiting steps of the given runs whose dependencies have all
-- completed, with what their hooks need: the step as the sequence's
-- current definition has it (defined false: the step is no longer in it),
-- the run's slot and the project's domain. A step without data gets {};
-- retry_override is the step's object as JSON text, empty for none.
-- The caller holds the runs and knows them running (runstep.Advance), so
-- the statement does not check: with statistics from before a burst of
-- runs, a status condition made PostgreSQL scan every running run for each
-- batch instead of reading the given runs' steps by their key.
SELECT s.run_id, s.name, r.project_id, r.sequence_id, r.slot, p.domain,
    (d.step IS NOT NULL)::boolean AS defined,
    COALESCE(d.step ->> 'path', '/')::text AS path,
    COALESCE(d.step -> 'data', '{}'::jsonb)::jsonb AS data,
    COALESCE(CASE WHEN jsonb_typeof(d.step -> 'retryOverride') = 'object'
                  THEN (d.step -> 'retryOverride')::text END, '')::text AS retry_override
FROM sequence_run_steps AS s
JOIN sequence_runs AS r ON r.id = s.run_id
JOIN sequences AS q ON q.id = r.sequence_id
JOIN projects AS p ON p.id = r.project_id
LEFT JOIN LATERAL (
    SELECT e.step FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(q.steps) = 'array' THEN q.steps ELSE '[]'::jsonb END) AS e(step)
    WHERE e.step ->> 'name' = s.name
    LIMIT 1
) AS d ON true
WHERE s.run_id = ANY(sqlc.arg(run_ids)::uuid[])
  AND s.status = 'waiting'
  AND NOT EXISTS (
    SELECT 1 FROM unnest(s.depends_on) AS dep(name)
    LEFT JOIN sequence_run_steps AS x ON x.run_id = s.run_id AND x.name = dep.name
    WHERE x.status IS DISTINCT FROM 'completed')
ORDER BY s.run_id, s.name;

-- name: LockQuotaPeriods :many
-- The current billing period's row of each project (created at zero when
-- missing), locked until the transaction ends as the gateway's creates lock
-- it (in project order, so the two never deadlock), with the hard cap the
-- period is judged by (quota x percent / 100, rounded down), the quota, and
-- the usage thresholds already claimed in the period.
WITH locked AS (
    INSERT INTO usage_periods (project_id, period_start, period_end, hooks_created)
    SELECT p.id,
           date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
           (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC',
           0
    FROM (SELECT DISTINCT unnest(sqlc.arg(project_ids)::uuid[]) AS id) AS p
    ORDER BY p.id
    ON CONFLICT (project_id, period_start)
    DO UPDATE SET hooks_created = usage_periods.hooks_created
    RETURNING project_id, hooks_created, period_start, alerted_thresholds
)
SELECT locked.project_id, locked.hooks_created, locked.period_start, locked.alerted_thresholds,
    p.plan_quota,
    LEAST(floor(p.plan_quota::numeric * p.plan_hard_cap_percent / 100),
          9223372036854775807)::bigint AS hard_cap,
    now()::timestamptz AS db_now
FROM locked
JOIN projects AS p ON p.id = locked.project_id;

-- name: ClaimStepQuotaThresholds :exec
-- Records usage thresholds that sequence step hooks reached first in the
-- period (event.QuotaCrossings), in the transaction holding the period's
-- row (LockQuotaPeriods), as the gateway's creates claim theirs.
UPDATE usage_periods
SET alerted_thresholds = alerted_thresholds || sqlc.arg(thresholds)::integer[]
WHERE project_id = sqlc.arg(project_id) AND period_start = sqlc.arg(period_start);

-- name: StartSequenceSteps :exec
-- Starts ready steps (runstep.Advance decided each): statuses[i] pending
-- (a hook due now, or at its run's slot for a run written ahead of it,
-- counted in the project's period), failed (over the hard
-- cap: a failed hook saying so, not counted) or skipped (no longer in the
-- definition: no hook; hook_ids[i] is then the nil UUID). The hooks carry
-- their sequence data (sequence, step, the run's slot, the run); the
-- trigger of migration 00006 wakes the schedulers for the pending ones.
-- The counts go into the period rows LockQuotaPeriods locked.
WITH u AS (
    SELECT unnest(sqlc.arg(run_ids)::uuid[]) AS run_id,
        unnest(sqlc.arg(names)::text[]) AS name,
        unnest(sqlc.arg(hook_ids)::uuid[]) AS hook_id,
        unnest(sqlc.arg(statuses)::text[]) AS status,
        unnest(sqlc.arg(project_ids)::uuid[]) AS project_id,
        unnest(sqlc.arg(domains)::text[]) AS domain,
        unnest(sqlc.arg(paths)::text[]) AS path,
        unnest(sqlc.arg(datas)::text[]) AS data,
        unnest(sqlc.arg(retry_overrides)::text[]) AS retry_override,
        unnest(sqlc.arg(sequence_ids)::uuid[]) AS sequence_id,
        unnest(sqlc.arg(slots)::timestamptz[]) AS slot
), hook AS (
    INSERT INTO hooks (id, project_id, path, domain, data, post_at, run_at, status, failure_error,
        retry_override, sequence_id, sequence_step, sequence_last_run_at, sequence_run_id)
    SELECT u.hook_id, u.project_id, u.path, u.domain, u.data::jsonb, GREATEST(now(), u.slot),
        CASE WHEN u.status = 'pending' THEN GREATEST(now(), u.slot) END,
        CASE WHEN u.status = 'pending' THEN 'pending' ELSE 'failed' END,
        CASE WHEN u.status = 'failed' THEN sqlc.arg(quota_error)::text END,
        NULLIF(u.retry_override, '')::jsonb, u.sequence_id, u.name, u.slot, u.run_id
    FROM u
    WHERE u.status IN ('pending', 'failed')
), counted AS (
    UPDATE usage_periods AS p
    SET hooks_created = p.hooks_created + c.hooks
    FROM (
        SELECT u.project_id, count(*) AS hooks FROM u WHERE u.status = 'pending' GROUP BY u.project_id
    ) AS c
    WHERE p.project_id = c.project_id
      AND p.period_start = date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
)
UPDATE sequence_run_steps AS s
SET status  = u.status,
    hook_id = CASE WHEN u.status = 'skipped' THEN NULL ELSE u.hook_id END
FROM u
WHERE s.run_id = u.run_id AND s.name = u.name AND s.status = 'waiting';

-- name: SkipSequenceDependents :exec
-- Skips, in the given runs, every waiting step that depends, directly or
-- not, on a failed or skipped step: it can never run.
WITH RECURSIVE doomed AS (
    SELECT s.run_id, s.name
    FROM sequence_run_steps AS s
    WHERE s.run_id = ANY(sqlc.arg(run_ids)::uuid[]) AND s.status IN ('failed', 'skipped')
    UNION
    SELECT s.run_id, s.name
    FROM doomed AS d
    JOIN sequence_run_steps AS s ON s.run_id = d.run_id AND d.name = ANY(s.depends_on)
)
UPDATE sequence_run_steps AS s
SET status = 'skipped'
FROM doomed AS d
WHERE s.run_id = d.run_id AND s.name = d.name AND s.status = 'waiting';

-- name: FinishSequenceRuns :exec
-- Ends the given running runs none of whose steps is waiting or pending:
-- failed when a step failed, else completed.
UPDATE sequence_runs AS r
SET status      = CASE WHEN EXISTS (SELECT 1 FROM sequence_run_steps AS f
                                    WHERE f.run_id = r.id AND f.status = 'failed')
                       THEN 'failed' ELSE 'completed' END,
    finished_at = now()
WHERE r.id = ANY(sqlc.arg(run_ids)::uuid[]) AND r.status = 'running'
  AND NOT EXISTS (SELECT 1 FROM sequence_run_steps AS s
                  WHERE s.run_id = r.id AND s.status IN ('waiting', 'pending'));

-- name: SequenceStatisticsStale :one
-- Whether the planner's statistics of runs or steps lag far behind their
-- rows: more rows written since the last ANALYZE than there are rows (and
-- 1,000), so that a burst growing a table from nothing is analyzed a few
-- times (at 1,000 rows, 2,000, 4,000...), never at every batch
-- (docs/sequences.md, "Bursts of runs").
SELECT COALESCE(bool_or(t.n_mod_since_analyze > GREATEST(1000, t.n_live_tup)), false)::boolean AS stale
FROM pg_catalog.pg_stat_user_tables AS t
WHERE t.relname IN ('sequence_runs', 'sequence_run_steps');

-- name: AnalyzeSequenceRuns :exec
ANALYZE sequence_runs, sequence_run_steps;

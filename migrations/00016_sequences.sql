-- Sequences (docs/sequences.md): recurring, calendar-scheduled chains of
-- hooks. The gateway writes a sequence's definition (create, replace,
-- pause, resume, delete) and plans its first slot; the scheduler is the
-- only writer of runs, of their steps, of the hooks they create, and of a
-- sequence's progress through its slots (next_run_at, last_run_at, ended).

-- +goose Up

CREATE TABLE sequences (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (name ~ '^[a-z0-9_-]{1,100}$'),
    -- The schedule as pkg/calendar's Spec, exactly as the API took it.
    schedule     jsonb NOT NULL,
    -- The steps as the API took them: [{name, path, data, dependsOn?,
    -- retryOverride?}], 1 to 10, validated (names unique, dependencies
    -- known and acyclic) by the gateway.
    steps        jsonb NOT NULL,
    -- The anchor of an `every` schedule and the first instant a slot may
    -- have; defaults to the creation time.
    start_at     timestamptz NOT NULL,
    end_at       timestamptz,
    catch_up     text NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest', 'all', 'none')),
    overlap      text NOT NULL DEFAULT 'allow' CHECK (overlap IN ('allow', 'skip')),
    status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'ended')),
    -- The next slot to run (active only). The gateway sets it when it
    -- (re)plans the sequence (create, replace, resume: the first slot at
    -- or after max(now, start_at)); the scheduler advances it past each
    -- slot it handles, in the transaction that records the slot's run.
    next_run_at  timestamptz,
    -- The latest slot that got a run (started or skipped).
    last_run_at  timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, name),
    CHECK (status = 'active' OR next_run_at IS NULL)
);
-- The scheduler's due scan: only active sequences with a slot.
CREATE INDEX sequences_due_idx ON sequences (next_run_at) WHERE status = 'active' AND next_run_at IS NOT NULL;
-- Listing, newest first, with the id as the keyset tie-breaker.
CREATE INDEX sequences_project_created_idx ON sequences (project_id, created_at, id);

-- A run of a sequence: one per slot (trigger 'schedule'), or one per
-- trigger request (trigger 'manual'). Skipped slots (catch-up, overlap)
-- are runs with status 'skipped' and no steps started.
CREATE TABLE sequence_runs (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    sequence_id  uuid NOT NULL REFERENCES sequences (id) ON DELETE CASCADE,
    slot         timestamptz NOT NULL,
    trigger      text NOT NULL CHECK (trigger IN ('schedule', 'manual')),
    status       text NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'skipped')),
    -- Why a run was skipped: 'catch_up' (missed while the service was
    -- down, left out by the catch-up policy) or 'overlap' (the previous
    -- run was unfinished and overlap is 'skip').
    skip_reason  text CHECK (skip_reason IN ('catch_up', 'overlap')),
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    CHECK ((status = 'skipped') = (skip_reason IS NOT NULL))
);
-- A slot of the schedule gets one run, whichever scheduler gets there
-- first: several schedulers never create the same run twice.
CREATE UNIQUE INDEX sequence_runs_slot_idx ON sequence_runs (sequence_id, slot) WHERE trigger = 'schedule';
-- Listing a sequence's runs, newest slot first.
CREATE INDEX sequence_runs_sequence_idx ON sequence_runs (sequence_id, slot, id);
-- The overlap check: a sequence's unfinished runs.
CREATE INDEX sequence_runs_running_idx ON sequence_runs (sequence_id) WHERE status = 'running';

-- The steps of a run. waiting: a dependency has not completed yet;
-- pending: its hook exists (hook_id) and has not finished; completed,
-- failed: its hook finished so; skipped: a dependency failed (or the run
-- was skipped).
CREATE TABLE sequence_run_steps (
    run_id      uuid NOT NULL REFERENCES sequence_runs (id) ON DELETE CASCADE,
    name        text NOT NULL,
    depends_on  text[] NOT NULL DEFAULT '{}',
    hook_id     uuid,
    status      text NOT NULL CHECK (status IN ('waiting', 'pending', 'completed', 'failed', 'skipped')),
    PRIMARY KEY (run_id, name),
    CHECK ((status = 'waiting' OR status = 'skipped') OR hook_id IS NOT NULL)
);
-- The result path finds a finished hook's step by the hook's id.
CREATE UNIQUE INDEX sequence_run_steps_hook_idx ON sequence_run_steps (hook_id) WHERE hook_id IS NOT NULL;

-- POST /v1/sequences/{id}/trigger: the gateway records the request with the
-- id the run will have and answers 201; the scheduler creates the run (and
-- deletes the request) in one transaction, so runs have one writer.
CREATE TABLE sequence_triggers (
    run_id        uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    sequence_id   uuid NOT NULL REFERENCES sequences (id) ON DELETE CASCADE,
    requested_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sequence_triggers_requested_idx ON sequence_triggers (requested_at);

-- The run a step hook belongs to, so that the scheduler, applying the
-- hook's final result, finds the run's next steps in the same transaction.
ALTER TABLE hooks ADD COLUMN sequence_run_id uuid;

-- +goose Down
ALTER TABLE hooks DROP COLUMN sequence_run_id;
DROP TABLE sequence_triggers;
DROP TABLE sequence_run_steps;
DROP TABLE sequence_runs;
DROP TABLE sequences;

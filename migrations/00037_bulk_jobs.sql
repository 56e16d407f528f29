-- Bulk jobs (docs/choices.md, "Bulk jobs"): a bulk retry, replay or cancel
-- over a selection of any size, run by the gateways in batches, each batch
-- one short transaction that acts on up to batch_size hooks after the
-- job's cursor and records the job's progress with it, so that a job
-- resumed by another gateway (its runner's lease ran out) neither repeats
-- nor skips a hook.
--
-- The selection and the edit are the columns of a range bulk action's
-- (the hooks' post_at in [start_time, end_time), path or path_base,
-- sequence_id, tags), kept as typed columns so that each batch passes them
-- to the action's statement as they are. The cursor (cursor_post_at,
-- cursor_id) is the last hook in (post_at, id) order that a batch
-- selected; NULL before the first.
--
-- state: running (a runner works on it or will), cancelling (asked to stop:
-- the runner stops before its next batch), completed, cancelled, failed
-- (error_code and error say why: the quota ran out during a replay, the
-- selection's project is gone). runner and lease_expires_at are the
-- runner's lease: a job whose lease has run out is taken by any gateway.
--
-- bulk_jobs_runnable_idx finds unfinished jobs, bulk_jobs_project_idx a
-- project's jobs newest first.

-- +goose Up
CREATE TABLE bulk_jobs (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    action           text NOT NULL CHECK (action IN ('retry', 'replay', 'cancel')),
    start_time       timestamptz NOT NULL,
    end_time         timestamptz NOT NULL,
    path             text,
    path_base        text,
    sequence_id      uuid,
    tags             text[],
    new_path         text,
    new_data         jsonb,
    new_post_at      timestamptz,
    state            text NOT NULL DEFAULT 'running'
                     CHECK (state IN ('running', 'cancelling', 'completed', 'cancelled', 'failed')),
    total            bigint NOT NULL,
    selected         bigint NOT NULL DEFAULT 0,
    affected         bigint NOT NULL DEFAULT 0,
    batches          integer NOT NULL DEFAULT 0,
    cursor_post_at   timestamptz,
    cursor_id        uuid,
    error_code       text,
    error            text,
    runner           text,
    lease_expires_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    CHECK (start_time < end_time),
    CHECK ((cursor_post_at IS NULL) = (cursor_id IS NULL))
);

CREATE INDEX bulk_jobs_runnable_idx ON bulk_jobs (lease_expires_at NULLS FIRST)
    WHERE state IN ('running', 'cancelling');
CREATE INDEX bulk_jobs_project_idx ON bulk_jobs (project_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE IF EXISTS bulk_jobs;

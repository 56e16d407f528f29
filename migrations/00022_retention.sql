-- +goose NO TRANSACTION

-- Retention (docs/operations.md, "Retention"): a project's completed and
-- failed hooks, with their attempts, are deleted retention_days after
-- they finished. The owner sets retention_days (PATCH /v1/project
-- retentionDays, default 30); the operator sets the plan's bound
-- (gateway admin set-plan --max-retention-days, default 90). The gateway
-- refuses a retention_days above the bound; when the operator lowers the
-- bound below a project's setting, the cleaner uses the bound
-- (LEAST(retention_days, plan_max_retention_days)), so the columns are not
-- checked against each other here. Both are catalogue-only changes (a
-- constant default), so the lock is brief on any table.
--
-- A hook's finishing time is updated_at: applying a final result (and an
-- async wait's end) sets it, and nothing else writes a finished hook but a
-- bulk retry, which makes it pending again (and so not a candidate).
-- hooks_finished_idx finds a project's finished hooks oldest first, so the
-- cleaner's search for expired hooks reads only what it deletes (and one
-- row past it); pending and retry hooks are not in it. It is built
-- CONCURRENTLY, as migration 00005 did, because hooks may hold millions of
-- rows, and goose runs this file outside a transaction for that; the DROP
-- first (and IF NOT EXISTS on the columns) make a retry after a failed
-- build, which leaves an invalid index behind, start clean.

-- +goose Up
ALTER TABLE projects
    ADD COLUMN IF NOT EXISTS retention_days integer NOT NULL DEFAULT 30
        CONSTRAINT projects_retention_days_check CHECK (retention_days BETWEEN 1 AND 3650),
    ADD COLUMN IF NOT EXISTS plan_max_retention_days integer NOT NULL DEFAULT 90
        CONSTRAINT projects_plan_max_retention_days_check CHECK (plan_max_retention_days BETWEEN 1 AND 3650);
DROP INDEX CONCURRENTLY IF EXISTS hooks_finished_idx;
CREATE INDEX CONCURRENTLY hooks_finished_idx ON hooks (project_id, updated_at)
    WHERE status IN ('completed', 'failed');

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS hooks_finished_idx;
ALTER TABLE projects DROP COLUMN IF EXISTS plan_max_retention_days, DROP COLUMN IF EXISTS retention_days;

-- +goose NO TRANSACTION

-- The two list indexes without status, (project_id, created_at, id) and
-- (project_id, post_at, id), are dropped. Every write of a hook that is
-- not HOT (its claim moves run_at, its completion changes status) added an
-- entry to each of them: in a burst they were a large share of
-- PostgreSQL's processor time (docs/benchmarks.md, "Writes per hook"). A list
-- of any status now merges the four per-status ranges of
-- (project_id, status, created_at, id) and (project_id, status, post_at,
-- id) (services/gateway/internal/store/list.sql). CONCURRENTLY, as
-- migration 00005 did, so that upgrading a busy deployment does not block
-- writes; goose runs this file outside a transaction for that.

-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS hooks_project_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS hooks_project_post_at_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS hooks_project_created_idx ON hooks (project_id, created_at, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS hooks_project_post_at_idx ON hooks (project_id, post_at, id);

-- +goose NO TRANSACTION

-- Listing by status sorted by postAt: without this index a status filter
-- with sortBy=postAt either walks the project's whole post_at index to find
-- a rare status, or sorts every hook of a common one. Built CONCURRENTLY so
-- that upgrading a deployment with millions of hooks does not block hook
-- creation; the DROP first makes a retry after a failed build (which leaves
-- an invalid index behind) start clean.

-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS hooks_project_status_post_at_idx;
CREATE INDEX CONCURRENTLY hooks_project_status_post_at_idx ON hooks (project_id, status, post_at, id);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS hooks_project_status_post_at_idx;

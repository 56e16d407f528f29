-- +goose Up

-- A project's optional cap on its deliveries in flight to any one host from
-- one dispatcher (PATCH /v1/project maxConcurrency). Under it, and under the
-- operator's ceiling SUNDIAL_DISPATCHER_HOST_CONCURRENCY, each dispatcher
-- adapts the limit to the receiver (docs/choices.md, "Per-host
-- concurrency adapts to the receiver"). NULL: no cap of the project's own.
--
-- Catalogue-only (nullable, no default), so the lock is brief on any table.
ALTER TABLE projects ADD COLUMN max_concurrency integer
    CHECK (max_concurrency IS NULL OR max_concurrency BETWEEN 1 AND 10000);

-- +goose Down
ALTER TABLE projects DROP COLUMN max_concurrency;

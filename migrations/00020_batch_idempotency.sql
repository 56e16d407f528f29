-- An Idempotency-Key of POST /v1/hooks/batch names every hook its request
-- created, in order (internal/idempotency). hook_id stays the first of them,
-- so that keys claimed before this migration (a single create, hook_ids
-- NULL) read as a list of one.

-- +goose Up
ALTER TABLE idempotency_keys ADD COLUMN hook_ids uuid[];

-- +goose Down
ALTER TABLE idempotency_keys DROP COLUMN hook_ids;

-- +goose Up

-- Rate limit per API key, a plan setting of the key's project: each key has
-- a token bucket refilled at rate_limit_per_second and holding at most
-- rate_limit_burst requests. Buckets live in each gateway replica's memory,
-- so N replicas admit up to N times the limit.
ALTER TABLE projects
    ADD COLUMN rate_limit_per_second integer NOT NULL DEFAULT 100
        CONSTRAINT projects_rate_limit_per_second_check CHECK (rate_limit_per_second BETWEEN 1 AND 100000),
    ADD COLUMN rate_limit_burst integer NOT NULL DEFAULT 200
        CONSTRAINT projects_rate_limit_burst_check CHECK (rate_limit_burst BETWEEN 1 AND 1000000);

-- The usage thresholds (percent of plan_quota: 75, 100, 150) whose alert
-- has been claimed in this period. A create claims a threshold in the same
-- transaction as its count, under the row lock that count takes, so that one
-- alert is published per threshold and period however many gateways run.
ALTER TABLE usage_periods
    ADD COLUMN alerted_thresholds integer[] NOT NULL DEFAULT '{}';

-- Idempotency-Key of POST /v1/hooks: a key names one hook for 24 hours.
-- The key lives apart from the hook so that it can expire (a key older than
-- 24 hours may be used again) without touching the hooks table, and so that
-- a repeat after the hook was deleted is told so instead of creating it
-- again. request_hash is the SHA-256 of the request's canonical form: the
-- same key with a different request is refused. hook_id has no foreign key:
-- deleting hooks must not have to look here.
CREATE TABLE idempotency_keys (
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key           text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash  bytea NOT NULL CHECK (length(request_hash) = 32),
    hook_id       uuid NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, key)
);
-- The sweeper deletes expired keys oldest first.
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- The key is no longer kept on the hook: its unique index would forbid
-- reusing a key after 24 hours.
DROP INDEX hooks_idempotency_idx;
ALTER TABLE hooks DROP COLUMN idempotency_key;

-- +goose Down
ALTER TABLE hooks ADD COLUMN idempotency_key text;
CREATE UNIQUE INDEX hooks_idempotency_idx ON hooks (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
DROP TABLE idempotency_keys;
ALTER TABLE usage_periods DROP COLUMN alerted_thresholds;
ALTER TABLE projects DROP COLUMN rate_limit_burst, DROP COLUMN rate_limit_per_second;

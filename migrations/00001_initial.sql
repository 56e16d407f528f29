-- +goose Up

-- A project owns hooks, keys and settings. Its domain is where hooks go.
CREATE TABLE projects (
    id                    uuid PRIMARY KEY,
    name                  text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    domain                text NOT NULL CHECK (length(domain) BETWEEN 1 AND 253),
    -- Default retry settings (docs/product.md, "Statuses and retries"): a
    -- hook's retryOverride wins.
    retry_min_retries     integer NOT NULL DEFAULT 5 CHECK (retry_min_retries BETWEEN 0 AND 15),
    retry_delay_secs      integer NOT NULL DEFAULT 30 CHECK (retry_delay_secs BETWEEN 1 AND 3600),
    retry_strategy        text NOT NULL DEFAULT 'exponential' CHECK (retry_strategy IN ('fixed', 'exponential')),
    retry_backoff_factor  double precision NOT NULL DEFAULT 2.0 CHECK (retry_backoff_factor BETWEEN 1.0 AND 4.0),
    retry_max_delay_secs  integer NOT NULL DEFAULT 3600 CHECK (retry_max_delay_secs BETWEEN 1 AND 86400),
    retry_jitter          boolean NOT NULL DEFAULT true,
    async_timeout_secs    integer NOT NULL DEFAULT 300 CHECK (async_timeout_secs BETWEEN 1 AND 86400),
    -- Sent as the Authorization header of every delivery when set.
    authorization_header  text,
    -- Hooks per billing period, and the hard cap as a percentage of it.
    plan_quota            bigint NOT NULL DEFAULT 100000 CHECK (plan_quota > 0),
    plan_hard_cap_percent integer NOT NULL DEFAULT 200 CHECK (plan_hard_cap_percent >= 100),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored as SHA-256 hashes: the keys carry 256 bits of
-- randomness, so a slow hash adds nothing. The prefix is shown to people and
-- finds the row; the hash is compared in constant time.
CREATE TABLE api_keys (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name        text NOT NULL DEFAULT '',
    prefix      text NOT NULL UNIQUE,
    key_hash    bytea NOT NULL CHECK (length(key_hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at  timestamptz
);
CREATE INDEX api_keys_project_idx ON api_keys (project_id);

-- Signing keys sign deliveries (HMAC-SHA256, the key string's bytes). One is
-- active; after a rotation the old one retires until expires_at.
CREATE TABLE signing_keys (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    secret      text NOT NULL,
    state       text NOT NULL CHECK (state IN ('active', 'retiring')),
    expires_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((state = 'active') = (expires_at IS NULL))
);
CREATE UNIQUE INDEX signing_keys_one_active_idx ON signing_keys (project_id) WHERE state = 'active';
CREATE INDEX signing_keys_project_idx ON signing_keys (project_id);

-- A hook is one scheduled delivery. run_at is when the scheduler must next
-- act on it: post_at when new, try_at when waiting to retry, and the lease
-- expiry while a delivery is in flight, so that one index finds new, retrying
-- and abandoned hooks alike.
CREATE TABLE hooks (
    id                     uuid PRIMARY KEY,
    project_id             uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    path                   text NOT NULL,
    domain                 text NOT NULL,
    data                   jsonb NOT NULL,
    post_at                timestamptz NOT NULL,
    status                 text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'completed', 'failed', 'retry')),
    attempts               integer NOT NULL DEFAULT 0,
    post_duration_seconds  double precision NOT NULL DEFAULT 0,
    failure_error          text,
    try_at                 timestamptz,
    was_notified           boolean NOT NULL DEFAULT false,
    -- The hook's RetryOverride as the API received it, or NULL for the project defaults.
    retry_override         jsonb,
    sequence_id            uuid,
    sequence_step          text,
    sequence_last_run_at   timestamptz,
    idempotency_key        text,
    -- Scheduling and leasing.
    run_at                 timestamptz,
    lease_seq              bigint NOT NULL DEFAULT 0,
    lease_expires_at       timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CHECK ((status IN ('pending', 'retry')) = (run_at IS NOT NULL))
);

-- Finding due work: only unfinished hooks are in it, so millions of completed
-- hooks cost the claim nothing.
CREATE INDEX hooks_due_idx ON hooks (run_at) WHERE status IN ('pending', 'retry');
-- Listing, newest first by either sort key, with the id as the keyset tie-breaker.
CREATE INDEX hooks_project_created_idx ON hooks (project_id, created_at, id);
CREATE INDEX hooks_project_post_at_idx ON hooks (project_id, post_at, id);
CREATE INDEX hooks_project_status_created_idx ON hooks (project_id, status, created_at, id);
CREATE INDEX hooks_sequence_idx ON hooks (project_id, sequence_id) WHERE sequence_id IS NOT NULL;
CREATE UNIQUE INDEX hooks_idempotency_idx ON hooks (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Due hooks change often; vacuum early so the due index stays small.
ALTER TABLE hooks SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);

-- One row per delivery attempt, written once by the scheduler when the
-- attempt's result is applied.
CREATE TABLE hook_attempts (
    hook_id           uuid NOT NULL REFERENCES hooks (id) ON DELETE CASCADE,
    attempt           integer NOT NULL CHECK (attempt > 0),
    lease_seq         bigint NOT NULL,
    started_at        timestamptz NOT NULL,
    duration_seconds  double precision NOT NULL,
    outcome           text NOT NULL CHECK (outcome IN ('success', 'failure', 'async')),
    status_code       integer,
    error             text,
    response_excerpt  text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hook_id, attempt)
);

-- Hooks created per project and billing period (a calendar month, UTC).
CREATE TABLE usage_periods (
    project_id     uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    period_start   timestamptz NOT NULL,
    period_end     timestamptz NOT NULL,
    hooks_created  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, period_start)
);

-- +goose Down
DROP TABLE usage_periods;
DROP TABLE hook_attempts;
DROP TABLE hooks;
DROP TABLE signing_keys;
DROP TABLE api_keys;
DROP TABLE projects;

-- The dashboard (docs/dashboard.md): people who sign in, their roles in
-- projects, their sessions, one-time set-password links, sign-in
-- throttling shared by every gateway replica, and per-minute delivery
-- figures for the overview's plots (kept as results are applied, so that
-- no page scans the hooks table).

-- +goose Up

CREATE TABLE users (
    id             uuid PRIMARY KEY,
    -- Lower-cased; the sign-in form lower-cases what it is given.
    email          text NOT NULL UNIQUE CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
    -- argon2id in the PHC string format; NULL until the user sets one
    -- through a set-password link.
    password_hash  text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- A user's role in a project: owner (everything), member (everything but
-- keys and members), viewer (reads only).
CREATE TABLE memberships (
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    role        text NOT NULL CHECK (role IN ('owner', 'member', 'viewer')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, project_id)
);
CREATE INDEX memberships_project_idx ON memberships (project_id);

-- A signed-in browser. Only the SHA-256 of the cookie's token is kept. A
-- session ends at expires_at (absolute, 7 d after sign-in) or 12 h after
-- last_seen_at, whichever comes first; sign-out everywhere deletes every
-- session of the user.
CREATE TABLE user_sessions (
    token_hash    bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL
);
CREATE INDEX user_sessions_user_idx ON user_sessions (user_id);
CREATE INDEX user_sessions_expiry_idx ON user_sessions (expires_at);

-- One-time set-password links (`gateway admin create-user` prints one).
-- Only the SHA-256 of the link's token is kept; using it deletes it.
CREATE TABLE password_tokens (
    token_hash  bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Failed sign-ins, per key ('addr:<ip>' or 'user:<email>'), counted in a
-- window; every gateway replica reads and writes the same counts.
CREATE TABLE signin_failures (
    key           text PRIMARY KEY,
    failures      integer NOT NULL CHECK (failures > 0),
    window_start  timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Deliveries per project and minute (UTC, truncated), by outcome, and the
-- lateness of first attempts as a histogram over fixed bucket bounds
-- (docs/dashboard.md, "Figures"). The scheduler adds to it in the
-- transaction that applies a batch of results. A project's minute is
-- split over a few rows (shard, chosen per transaction) so that batches
-- applied side by side for one busy project do not queue on one row lock
-- until each commits; readers sum the shards. At most 8 rows per project
-- and minute: the overview's 7 days are at most 80,640 rows per project.
CREATE TABLE delivery_minutes (
    project_id        uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    minute            timestamptz NOT NULL,
    shard             smallint NOT NULL DEFAULT 0 CHECK (shard BETWEEN 0 AND 7),
    succeeded         integer NOT NULL DEFAULT 0,
    failed            integer NOT NULL DEFAULT 0,
    async             integer NOT NULL DEFAULT 0,
    -- Counts of first attempts by lateness bucket; bucket i holds
    -- lateness below the i-th bound of docs/dashboard.md (the last, above).
    lateness_buckets  bigint[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (project_id, minute, shard)
);

-- +goose Down
DROP TABLE delivery_minutes;
DROP TABLE signin_failures;
DROP TABLE password_tokens;
DROP TABLE user_sessions;
DROP TABLE memberships;
DROP TABLE users;

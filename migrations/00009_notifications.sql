-- +goose Up

-- Notifications (docs/product.md "Notifications", docs/notifications.md).
--
-- Flow: a producer (the scheduler for hook.failed and endpoint.recovered,
-- the gateway for quota.threshold and channel.test) inserts the alert into
-- `alerts` in the same transaction as the change that caused it, then
-- publishes the Alert event on NATS after commit. The notifier takes an
-- alert in (puts it into an alert group) when the event arrives, and a
-- sweeper takes in any alert whose event never came: PostgreSQL, not NATS,
-- is what makes an alert impossible to lose. A group goes out when its
-- send_at passes: one alert_sends row per channel (and per owner e-mail
-- list), each retried on its own with backoff, every try recorded in
-- alert_send_attempts.

-- Grouping and follow-up settings, and the addresses usage e-mails go to.
ALTER TABLE projects
    ADD COLUMN alert_group_wait_secs integer NOT NULL DEFAULT 120
        CONSTRAINT projects_alert_group_wait_secs_check CHECK (alert_group_wait_secs BETWEEN 0 AND 3600),
    ADD COLUMN alert_followup_min_secs integer NOT NULL DEFAULT 900
        CONSTRAINT projects_alert_followup_min_secs_check CHECK (alert_followup_min_secs BETWEEN 0 AND 86400),
    ADD COLUMN alert_followup_max_secs integer NOT NULL DEFAULT 86400
        CONSTRAINT projects_alert_followup_max_secs_check CHECK (alert_followup_max_secs BETWEEN 0 AND 604800),
    ADD COLUMN owner_emails text[] NOT NULL DEFAULT '{}'
        CONSTRAINT projects_owner_emails_check CHECK (cardinality(owner_emails) <= 20),
    ADD CONSTRAINT projects_alert_followup_order_check CHECK (alert_followup_min_secs <= alert_followup_max_secs);

-- A channel tells the people of one project about its alerts.
--   chat:    config {"url": "https://..."}  (Slack-compatible incoming webhook)
--   webhook: config {"url": "https://..."}  (versioned JSON, signed like deliveries)
--   email:   config {"host", "port", "username", "password", "tls": "starttls"|"tls"|"none",
--                    "from", "to": [...]}
-- config may hold secrets (the chat URL's token, the SMTP password): the API
-- never shows them and the services never log them.
CREATE TABLE notification_channels (
    id                   uuid PRIMARY KEY,
    project_id           uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name                 text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    kind                 text NOT NULL CHECK (kind IN ('chat', 'webhook', 'email')),
    config               jsonb NOT NULL,
    -- The alert kinds this channel receives (channel.test always reaches it).
    events               text[] NOT NULL DEFAULT '{hook.failed,endpoint.recovered,quota.threshold}'
        CHECK (events <@ '{hook.failed,endpoint.recovered,quota.threshold}'::text[]),
    enabled              boolean NOT NULL DEFAULT true,
    -- Health, kept by the notifier after every send attempt: a channel with
    -- consecutive_failures > 0 is failing, and the API says so.
    consecutive_failures integer NOT NULL DEFAULT 0,
    last_success_at      timestamptz,
    last_failure_at      timestamptz,
    last_error           text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notification_channels_project_idx ON notification_channels (project_id);

-- Every alert, written by its producer (the outbox) or, failing that, by
-- the notifier when the event arrives. id is the Alert's deterministic
-- alert_id, so writing it twice is a no-op. body is the eventv1.Alert
-- protobuf. group_id is NULL until the notifier has taken the alert in.
CREATE TABLE alerts (
    id           text PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('hook.failed', 'endpoint.recovered', 'quota.threshold', 'channel.test')),
    body         bytea NOT NULL,
    occurred_at  timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    group_id     uuid
);
CREATE INDEX alerts_waiting_idx ON alerts (created_at) WHERE group_id IS NULL;
CREATE INDEX alerts_group_idx ON alerts (group_id);
CREATE INDEX alerts_project_idx ON alerts (project_id, created_at);

-- An alert group is what goes out as one message. hook.failed alerts of a
-- project share the open group (closed_at IS NULL) until its send_at; every
-- other kind is a group of one, due at once. channel_id is set for a
-- channel.test group: it goes to that channel only.
CREATE TABLE alert_groups (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('hook.failed', 'endpoint.recovered', 'quota.threshold', 'channel.test')),
    channel_id   uuid REFERENCES notification_channels (id) ON DELETE CASCADE,
    opened_at    timestamptz NOT NULL DEFAULT now(),
    send_at      timestamptz NOT NULL,
    -- Set when the group stops taking alerts and its sends are created.
    closed_at    timestamptz,
    alert_count  integer NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX alert_groups_one_open_idx ON alert_groups (project_id, kind) WHERE closed_at IS NULL;
CREATE INDEX alert_groups_due_idx ON alert_groups (send_at) WHERE closed_at IS NULL;

-- The follow-up backoff of a project's failure alerts: after a failure group
-- goes out, the next may not go out before last_sent_at + followup_secs;
-- followup_secs doubles (up to the project's maximum) while failures keep
-- coming and starts again at the minimum after a quiet period as long as
-- the maximum.
CREATE TABLE alert_followups (
    project_id     uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    last_sent_at   timestamptz NOT NULL,
    followup_secs  integer NOT NULL
);

-- One row per group and target: a channel (channel_id set) or the owner
-- e-mail addresses of a quota alert (channel_id NULL, target 'owners').
-- pending rows are claimed under a lease (lease_expires_at) by a notifier;
-- a failed try sets next_try_at; after the give-up time the row is failed.
CREATE TABLE alert_sends (
    group_id          uuid NOT NULL REFERENCES alert_groups (id) ON DELETE CASCADE,
    target            text NOT NULL,
    channel_id        uuid REFERENCES notification_channels (id) ON DELETE CASCADE,
    state             text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
    attempts          integer NOT NULL DEFAULT 0,
    next_try_at       timestamptz NOT NULL DEFAULT now(),
    lease_expires_at  timestamptz,
    last_error        text,
    sent_at           timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, target)
);
CREATE INDEX alert_sends_due_idx ON alert_sends (next_try_at) WHERE state = 'pending';
CREATE INDEX alert_sends_channel_idx ON alert_sends (channel_id, created_at);

-- Every try of a send, for the API and the dashboard.
CREATE TABLE alert_send_attempts (
    group_id          uuid NOT NULL,
    target            text NOT NULL,
    attempt           integer NOT NULL CHECK (attempt > 0),
    channel_id        uuid REFERENCES notification_channels (id) ON DELETE CASCADE,
    started_at        timestamptz NOT NULL,
    duration_seconds  double precision NOT NULL,
    outcome           text NOT NULL CHECK (outcome IN ('sent', 'failed')),
    error             text,
    PRIMARY KEY (group_id, target, attempt),
    FOREIGN KEY (group_id, target) REFERENCES alert_sends (group_id, target) ON DELETE CASCADE
);
CREATE INDEX alert_send_attempts_channel_idx ON alert_send_attempts (channel_id, started_at DESC);

-- Endpoints (project, domain, path) whose hooks ran out of retries: the
-- scheduler inserts the row with the hook.failed alert and deletes it at the
-- first successful delivery to the endpoint, publishing endpoint.recovered.
CREATE TABLE failing_endpoints (
    project_id     uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    domain         text NOT NULL,
    path           text NOT NULL,
    failing_since  timestamptz NOT NULL,
    failed_hooks   integer NOT NULL DEFAULT 1,
    PRIMARY KEY (project_id, domain, path)
);

-- +goose Down
DROP TABLE failing_endpoints;
DROP TABLE alert_send_attempts;
DROP TABLE alert_sends;
DROP TABLE alert_followups;
DROP TABLE alert_groups;
DROP TABLE alerts;
DROP TABLE notification_channels;
ALTER TABLE projects
    DROP CONSTRAINT projects_alert_followup_order_check,
    DROP COLUMN owner_emails,
    DROP COLUMN alert_followup_max_secs,
    DROP COLUMN alert_followup_min_secs,
    DROP COLUMN alert_group_wait_secs;

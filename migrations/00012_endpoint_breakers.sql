-- +goose Up

-- Circuit breaker and Retry-After (docs/security.md, "Circuit breaker and
-- Retry-After"). The unit that fails together is the destination server: a
-- project's domain. One row per unit that has failed at least once; the
-- scheduler is its only writer of state (in the transaction that applies a
-- batch of results, and in the claim that takes a probe), the gateway only
-- sets resume_requested, which the scheduler applies.
--
-- active:  paused_at IS NULL. consecutive_failures counts the failures
--          (no answer, 429, 5xx) since the last healthy answer.
-- paused:  paused_at IS NOT NULL. No hook of the unit is handed out before
--          paused_until: a claim that finds one due moves its run_at to the
--          pause's end instead (no lease, no attempt). Once paused_until has
--          passed, the first claim to find a due hook takes it as the probe
--          (probe_hook_id) and moves paused_until to the probe's lease
--          expiry; the probe's answer closes the breaker (healthy) or
--          re-opens it with a doubled cooldown (failing).
CREATE TABLE endpoint_breakers (
    project_id            uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    domain                text NOT NULL,
    consecutive_failures  integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    -- When the current run of failures began (NULL with no failure).
    failing_since         timestamptz,
    last_error            text,
    paused_at             timestamptz,
    paused_until          timestamptz,
    -- What paused it: 'failures' (the breaker opened) or 'retry_after' (a
    -- 429 or 503 asked to wait), and the reason in words.
    pause_cause           text CHECK (pause_cause IN ('failures', 'retry_after')),
    pause_reason          text,
    -- The cooldown of the last opening, in seconds; doubles at each failed
    -- probe of one pause, up to the scheduler's maximum.
    cooldown_secs         integer NOT NULL DEFAULT 0 CHECK (cooldown_secs >= 0),
    -- The latest instant a deferred hook of this pause was moved to: a
    -- close releases the hooks deferred up to it (run_at in (now, held_until]).
    held_until            timestamptz,
    -- The probe delivery in flight, if any.
    probe_hook_id         uuid,
    -- Whether this pause raised an endpoint.paused alert (then its end
    -- raises endpoint.recovered).
    alerted               boolean NOT NULL DEFAULT false,
    -- Set by the gateway (POST /v1/endpoints/resume); the scheduler closes
    -- the breaker, releases the held hooks and clears it.
    resume_requested      boolean NOT NULL DEFAULT false,
    updated_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, domain),
    CHECK ((paused_at IS NULL) = (paused_until IS NULL)),
    CHECK ((paused_at IS NULL) = (pause_cause IS NULL))
);
-- The scheduler's resume sweep reads only the requests not yet applied.
CREATE INDEX endpoint_breakers_resume_idx ON endpoint_breakers (project_id) WHERE resume_requested;

-- The endpoint.paused alert kind (docs/notifications.md). Channels that
-- received every kind keep receiving every kind.
ALTER TABLE alerts DROP CONSTRAINT alerts_kind_check,
    ADD CONSTRAINT alerts_kind_check
        CHECK (kind IN ('hook.failed', 'endpoint.recovered', 'endpoint.paused', 'quota.threshold', 'channel.test'));
ALTER TABLE alert_groups DROP CONSTRAINT alert_groups_kind_check,
    ADD CONSTRAINT alert_groups_kind_check
        CHECK (kind IN ('hook.failed', 'endpoint.recovered', 'endpoint.paused', 'quota.threshold', 'channel.test'));
ALTER TABLE notification_channels DROP CONSTRAINT notification_channels_events_check,
    ALTER COLUMN events SET DEFAULT '{hook.failed,endpoint.recovered,endpoint.paused,quota.threshold}',
    ADD CONSTRAINT notification_channels_events_check
        CHECK (events <@ '{hook.failed,endpoint.recovered,endpoint.paused,quota.threshold}'::text[]);
UPDATE notification_channels
SET events = events || '{endpoint.paused}'::text[]
WHERE events @> '{hook.failed,endpoint.recovered,quota.threshold}'::text[];

-- +goose Down
UPDATE notification_channels SET events = array_remove(events, 'endpoint.paused');
ALTER TABLE notification_channels DROP CONSTRAINT notification_channels_events_check,
    ALTER COLUMN events SET DEFAULT '{hook.failed,endpoint.recovered,quota.threshold}',
    ADD CONSTRAINT notification_channels_events_check
        CHECK (events <@ '{hook.failed,endpoint.recovered,quota.threshold}'::text[]);
DELETE FROM alerts WHERE kind = 'endpoint.paused';
DELETE FROM alert_groups WHERE kind = 'endpoint.paused';
ALTER TABLE alert_groups DROP CONSTRAINT alert_groups_kind_check,
    ADD CONSTRAINT alert_groups_kind_check
        CHECK (kind IN ('hook.failed', 'endpoint.recovered', 'quota.threshold', 'channel.test'));
ALTER TABLE alerts DROP CONSTRAINT alerts_kind_check,
    ADD CONSTRAINT alerts_kind_check
        CHECK (kind IN ('hook.failed', 'endpoint.recovered', 'quota.threshold', 'channel.test'));
DROP TABLE endpoint_breakers;

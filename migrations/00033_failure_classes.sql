-- Failure classes and a policy per class (docs/choices.md, "Failure
-- classes"). Each failed attempt records its class, a word of
-- pkg/failclass ("dns", "410", ...); the hook keeps its last failure's
-- class beside failure_error. NULL for a success, a waiting 202 and what
-- was recorded before this migration. The words are checked by the
-- scheduler, their only writer, not by a constraint: a release that adds a
-- class needs no migration, and none scans hook_attempts.
--
-- A project's failure_policy maps a class to the action its failures take:
-- "fail" (the hook fails at once) or "pause" (the hook fails at once and the
-- endpoint pauses until resumed); a class it leaves out is retried, which
-- is what every failure did before. The gateway validates it.
--
-- A pause by that policy is an endpoint_breakers pause of cause
-- 'failure_policy'.

-- +goose Up
ALTER TABLE hook_attempts ADD COLUMN failure_class text;
ALTER TABLE hooks ADD COLUMN failure_class text;
ALTER TABLE projects ADD COLUMN failure_policy jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(failure_policy) = 'object');
ALTER TABLE endpoint_breakers DROP CONSTRAINT endpoint_breakers_pause_cause_check,
    ADD CONSTRAINT endpoint_breakers_pause_cause_check
        CHECK (pause_cause IN ('failures', 'retry_after', 'failure_policy'));

-- +goose Down
UPDATE endpoint_breakers
SET paused_at = NULL, paused_until = NULL, pause_cause = NULL, pause_reason = NULL, probe_hook_id = NULL
WHERE pause_cause = 'failure_policy';
ALTER TABLE endpoint_breakers DROP CONSTRAINT endpoint_breakers_pause_cause_check,
    ADD CONSTRAINT endpoint_breakers_pause_cause_check
        CHECK (pause_cause IN ('failures', 'retry_after'));
ALTER TABLE projects DROP COLUMN failure_policy;
ALTER TABLE hooks DROP COLUMN failure_class;
ALTER TABLE hook_attempts DROP COLUMN failure_class;

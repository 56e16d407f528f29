-- Projects and their settings (internal/project). The custom Authorization
-- header is write-only: these queries say whether it is set, never what it
-- is (the dispatcher reads the value to send it).

-- name: InsertProject :exec
-- A project is created in one transaction with its API key and signing key.
-- Its async secret is made by the gateway and stored sealed.
INSERT INTO projects (id, name, domain, async_secret_sealed)
VALUES (@id, @name, @domain, @async_secret_sealed);

-- name: GetProjectSettings :one
SELECT id, name, domain,
       retry_min_retries, retry_delay_secs, retry_strategy, retry_backoff_factor,
       retry_max_delay_secs, retry_jitter, async_timeout_secs,
       (authorization_header_sealed IS NOT NULL)::boolean AS authorization_header_set,
       plan_quota, plan_hard_cap_percent,
       alert_group_wait_secs, alert_followup_min_secs, alert_followup_max_secs, owner_emails,
       signature_scheme, max_concurrency, retention_days, plan_max_retention_days, failure_policy, ordering_on_failure,
       created_at, updated_at
FROM projects
WHERE id = @id;

-- name: LockProjectSettings :one
-- The settings a change is merged into, locked until the change commits so
-- that two concurrent changes cannot undo each other. FOR NO KEY UPDATE
-- leaves hooks free to be inserted meanwhile (their foreign-key checks
-- take KEY SHARE locks).
SELECT id, name, domain,
       retry_min_retries, retry_delay_secs, retry_strategy, retry_backoff_factor,
       retry_max_delay_secs, retry_jitter, async_timeout_secs,
       (authorization_header_sealed IS NOT NULL)::boolean AS authorization_header_set,
       plan_quota, plan_hard_cap_percent,
       alert_group_wait_secs, alert_followup_min_secs, alert_followup_max_secs, owner_emails,
       signature_scheme, max_concurrency, retention_days, plan_max_retention_days, failure_policy, ordering_on_failure,
       created_at, updated_at
FROM projects
WHERE id = @id
FOR NO KEY UPDATE;

-- name: UpdateProjectSettings :one
-- Writes the merged settings. The Authorization header changes only when
-- set_authorization_header is true (to NULL: cleared); it is stored sealed.
UPDATE projects
SET name                 = @name,
    domain               = @domain,
    retry_min_retries    = @retry_min_retries,
    retry_delay_secs     = @retry_delay_secs,
    retry_strategy       = @retry_strategy,
    retry_backoff_factor = @retry_backoff_factor,
    retry_max_delay_secs = @retry_max_delay_secs,
    retry_jitter         = @retry_jitter,
    async_timeout_secs   = @async_timeout_secs,
    alert_group_wait_secs   = @alert_group_wait_secs,
    alert_followup_min_secs = @alert_followup_min_secs,
    alert_followup_max_secs = @alert_followup_max_secs,
    owner_emails            = @owner_emails::text[],
    signature_scheme        = @signature_scheme,
    max_concurrency         = sqlc.narg(max_concurrency)::integer,
    retention_days          = @retention_days,
    failure_policy          = @failure_policy::jsonb,
    ordering_on_failure     = @ordering_on_failure::text,
    authorization_header_sealed = CASE WHEN @set_authorization_header::boolean
                                THEN sqlc.narg(authorization_header_sealed)::text
                                ELSE authorization_header_sealed END,
    updated_at           = now()
WHERE id = @id
RETURNING id, name, domain,
          retry_min_retries, retry_delay_secs, retry_strategy, retry_backoff_factor,
          retry_max_delay_secs, retry_jitter, async_timeout_secs,
          (authorization_header_sealed IS NOT NULL)::boolean AS authorization_header_set,
          plan_quota, plan_hard_cap_percent,
          alert_group_wait_secs, alert_followup_min_secs, alert_followup_max_secs, owner_emails,
          signature_scheme, max_concurrency, retention_days, plan_max_retention_days, failure_policy, ordering_on_failure,
          created_at, updated_at;

-- name: LockProjectPlan :one
-- The plan and rate limit an operator's change (gateway admin set-plan) is
-- merged into, locked until the change commits so that two concurrent
-- changes of different settings cannot undo each other.
SELECT plan_quota, plan_hard_cap_percent, rate_limit_per_second, rate_limit_burst, plan_max_retention_days
FROM projects
WHERE id = @id
FOR NO KEY UPDATE;

-- Quota and rate limits (internal/quota). A billing period is a calendar
-- month in UTC by the database clock; a project without a usage_periods row
-- for the current period has used nothing in it.

-- name: GetProjectLimits :one
-- What every authenticated request reports and enforces: the plan, the
-- current period's usage (absent row = 0) and the rate limit. Two primary
-- key look-ups.
SELECT p.plan_quota,
       p.plan_hard_cap_percent,
       p.rate_limit_per_second,
       p.rate_limit_burst,
       COALESCE(u.hooks_created, 0)::bigint AS hooks_created,
       (period.month AT TIME ZONE 'UTC')::timestamptz AS period_start,
       ((period.month + interval '1 month') AT TIME ZONE 'UTC')::timestamptz AS period_end,
       now()::timestamptz AS db_now
FROM projects AS p
-- The month is computed on UTC wall time: adding a month to a timestamptz
-- would follow the session's time zone.
CROSS JOIN LATERAL (
    SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AS month
) AS period
LEFT JOIN usage_periods AS u
    ON u.project_id = p.id AND u.period_start = period.month AT TIME ZONE 'UTC'
WHERE p.id = @project_id;

-- name: AddHooksToPeriod :one
-- Counts hooks in the project's current billing period and returns the
-- count with the plan it is judged by. The upsert locks the period's row
-- until the transaction ends, so concurrent creations are counted one after
-- the other and each caller's quota and threshold decisions see all the
-- others.
WITH counted AS (
    INSERT INTO usage_periods (project_id, period_start, period_end, hooks_created)
    VALUES (
        @project_id,
        date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
        (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC',
        @hooks::bigint
    )
    ON CONFLICT (project_id, period_start)
    DO UPDATE SET hooks_created = usage_periods.hooks_created + EXCLUDED.hooks_created
    RETURNING project_id, hooks_created, period_start, period_end, alerted_thresholds
)
SELECT counted.hooks_created,
       counted.period_start,
       counted.period_end,
       counted.alerted_thresholds,
       p.plan_quota,
       p.plan_hard_cap_percent,
       now()::timestamptz AS db_now
FROM counted
JOIN projects AS p ON p.id = counted.project_id;

-- name: LockPeriods :many
-- A create batch's first statement (quota.Lock): the current period's row
-- of each project, created at zero when missing, locked until the
-- transaction ends, with the plan it is judged by. The rows are locked in
-- project order, so that batches sharing projects wait for each other
-- instead of deadlocking. The ids must be distinct; they come as text, as
-- InsertHooks's do (gateway.sql), which pgx encodes more cheaply.
WITH locked AS (
    INSERT INTO usage_periods (project_id, period_start, period_end, hooks_created)
    SELECT p.id,
           date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
           (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC',
           0
    FROM (SELECT unnest(@project_ids::text[])::uuid AS id) AS p
    ORDER BY p.id
    ON CONFLICT (project_id, period_start)
    DO UPDATE SET hooks_created = usage_periods.hooks_created
    RETURNING project_id, hooks_created, period_start, period_end, alerted_thresholds
)
SELECT locked.project_id,
       locked.hooks_created,
       locked.period_start,
       locked.period_end,
       locked.alerted_thresholds,
       p.plan_quota,
       p.plan_hard_cap_percent,
       now()::timestamptz AS db_now
FROM locked
JOIN projects AS p ON p.id = locked.project_id;

-- name: AddHooksToPeriods :exec
-- Counts the hooks a create batch inserted, hooks[i] for project_ids[i],
-- in the rows LockPeriods locked (the same transaction, so the same now()).
UPDATE usage_periods AS u
SET hooks_created = u.hooks_created + c.hooks
FROM (
    SELECT unnest(@project_ids::text[])::uuid AS project_id,
        unnest(@hooks::bigint[]) AS hooks
) AS c
WHERE u.project_id = c.project_id
  AND u.period_start = date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';

-- name: ClaimQuotaThresholds :exec
-- Records thresholds whose alert this transaction will publish. The caller
-- holds the period's row lock (AddHooksToPeriod), so no other transaction
-- can claim the same threshold in between.
UPDATE usage_periods
SET alerted_thresholds = alerted_thresholds || @thresholds::integer[]
WHERE project_id = @project_id AND period_start = @period_start;

-- name: SetProjectRateLimit :execrows
UPDATE projects
SET rate_limit_per_second = @rate_limit_per_second,
    rate_limit_burst = @rate_limit_burst,
    updated_at = now()
WHERE id = @id;

-- name: InsertProject :exec
-- A project is created in one transaction with its API key and signing key.
INSERT INTO projects (id, name, domain)
VALUES (@id, @name, @domain);

-- name: InsertAPIKey :exec
-- Only the visible prefix and the SHA-256 of the whole key are stored.
INSERT INTO api_keys (id, project_id, prefix, key_hash)
VALUES (@id, @project_id, @prefix, @key_hash);

-- name: InsertActiveSigningKey :exec
INSERT INTO signing_keys (id, project_id, secret, state)
VALUES (@id, @project_id, @secret, 'active');

-- name: GetAPIKeyByPrefix :one
-- The prefix finds the row; the caller compares the hash in constant time.
SELECT id, project_id, key_hash, revoked_at
FROM api_keys
WHERE prefix = @prefix;

-- name: RevokeAPIKey :execrows
UPDATE api_keys
SET revoked_at = now()
WHERE prefix = @prefix AND revoked_at IS NULL;

-- name: GetProjectPlan :one
-- What creating a hook needs to know about its project.
SELECT domain, plan_quota, plan_hard_cap_percent
FROM projects
WHERE id = @id;

-- name: SetProjectPlan :execrows
UPDATE projects
SET plan_quota = @plan_quota,
    plan_hard_cap_percent = @plan_hard_cap_percent,
    updated_at = now()
WHERE id = @id;

-- name: CountHookInPeriod :one
-- Counts one hook in the project's current billing period: a calendar month
-- in UTC by the database clock. The upsert locks the period's row, so
-- concurrent creations are counted one after the other and the caller's
-- quota check sees every one of them.
INSERT INTO usage_periods (project_id, period_start, period_end, hooks_created)
VALUES (
    @project_id,
    date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
    (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC',
    1
)
ON CONFLICT (project_id, period_start)
DO UPDATE SET hooks_created = usage_periods.hooks_created + 1
RETURNING hooks_created, period_end, now()::timestamptz AS db_now;

-- name: InsertHook :one
-- post_at is the given instant, or the database clock plus post_in_seconds
-- when none is given: the database clock decides when a hook is due.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, run_at, retry_override)
SELECT @id::uuid, @project_id::uuid, @path::text, @domain::text, @data::jsonb,
       due.at, due.at, sqlc.narg(retry_override)::jsonb
FROM (
    SELECT COALESCE(
        sqlc.narg(post_at)::timestamptz,
        now() + make_interval(secs => sqlc.narg(post_in_seconds)::bigint)
    ) AS at
) AS due
RETURNING *;

-- name: GetHook :one
SELECT * FROM hooks WHERE project_id = @project_id AND id = @id;

-- name: DeleteHook :execrows
-- Attempt rows go with the hook (ON DELETE CASCADE).
DELETE FROM hooks WHERE project_id = @project_id AND id = @id;

-- name: DatabaseNow :one
-- The database clock: readiness checks that the database answers with it.
SELECT now()::timestamptz AS now;

-- name: GetActiveSigningKey :one
SELECT secret FROM signing_keys WHERE project_id = @project_id AND state = 'active';

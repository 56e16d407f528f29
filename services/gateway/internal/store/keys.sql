-- API keys (internal/apikey) and signing keys (internal/signingkey) of a
-- project. Every query is scoped by project_id, so that a key's id from
-- another project is simply not found.

-- name: LockProjectKeys :one
-- Serialises the changes to one project's keys (rotations, revocations)
-- that must see each other: FOR NO KEY UPDATE, unlike FOR UPDATE, does not
-- wait for or block the foreign-key checks of hooks being inserted.
SELECT id FROM projects WHERE id = @project_id FOR NO KEY UPDATE;

-- name: InsertAPIKey :one
-- Only the visible prefix and the SHA-256 of the whole key are stored.
INSERT INTO api_keys (id, project_id, name, prefix, key_hash)
VALUES (@id, @project_id, @name, @prefix, @key_hash)
RETURNING id, name, prefix, created_at, last_used_at, revoked_at;

-- name: GetAPIKeyByPrefix :one
-- The prefix finds the row; the caller compares the hash in constant time.
-- touch_due says, by the database clock, whether last_used_at is more than
-- a minute old, so that it is written at most once a minute per key.
SELECT id, project_id, key_hash, revoked_at,
       (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')::boolean AS touch_due
FROM api_keys
WHERE prefix = @prefix;

-- name: GetAPIKeyWithLimits :one
-- GetAPIKeyByPrefix and GetProjectLimits (quota.sql) in one round trip:
-- what every authenticated request reads before its handler runs. The
-- key's project always exists (ON DELETE CASCADE).
SELECT k.id, k.project_id, k.key_hash, k.revoked_at,
       (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute')::boolean AS touch_due,
       p.plan_quota,
       p.plan_hard_cap_percent,
       p.rate_limit_per_second,
       p.rate_limit_burst,
       COALESCE(u.hooks_created, 0)::bigint AS hooks_created,
       (period.month AT TIME ZONE 'UTC')::timestamptz AS period_start,
       ((period.month + interval '1 month') AT TIME ZONE 'UTC')::timestamptz AS period_end,
       now()::timestamptz AS db_now
FROM api_keys AS k
JOIN projects AS p ON p.id = k.project_id
CROSS JOIN LATERAL (
    SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AS month
) AS period
LEFT JOIN usage_periods AS u
    ON u.project_id = p.id AND u.period_start = period.month AT TIME ZONE 'UTC'
WHERE k.prefix = @prefix;

-- name: TouchAPIKey :execrows
-- Records a use of the key, at most once a minute: the condition repeats
-- GetAPIKeyByPrefix's touch_due so that concurrent requests write once.
UPDATE api_keys
SET last_used_at = now()
WHERE id = @id AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');

-- name: RevokeAPIKey :execrows
UPDATE api_keys
SET revoked_at = now()
WHERE prefix = @prefix AND revoked_at IS NULL;

-- name: ListAPIKeys :many
-- Oldest first; revoked keys stay listed (with revoked_at) as a record.
SELECT id, name, prefix, created_at, last_used_at, revoked_at
FROM api_keys
WHERE project_id = @project_id
ORDER BY created_at, id;

-- name: GetAPIKey :one
SELECT id, name, prefix, created_at, last_used_at, revoked_at
FROM api_keys
WHERE project_id = @project_id AND id = @id;

-- name: CountUsableAPIKeys :one
SELECT count(*) FROM api_keys WHERE project_id = @project_id AND revoked_at IS NULL;

-- name: RevokeAPIKeyByID :execrows
UPDATE api_keys
SET revoked_at = now()
WHERE project_id = @project_id AND id = @id AND revoked_at IS NULL;

-- name: InsertActiveSigningKey :one
-- The secret is stored sealed (package secretbox), never in plain text.
INSERT INTO signing_keys (id, project_id, secret_sealed, state)
VALUES (@id, @project_id, @secret_sealed, 'active')
RETURNING *;

-- name: GetActiveSigningKey :one
SELECT * FROM signing_keys WHERE project_id = @project_id AND state = 'active';

-- name: ListSigningKeys :many
-- The keys that sign deliveries: the active one, then a retiring one still
-- inside its grace period. An expired retiring key signs nothing (the
-- dispatcher ignores it too) and is left out.
SELECT *
FROM signing_keys
WHERE project_id = @project_id
  AND (state = 'active' OR expires_at > now())
ORDER BY (state = 'active') DESC, expires_at DESC, id;

-- name: DeleteRetiringSigningKeys :execrows
-- A rotation keeps one retiring key at most: the one it retires.
DELETE FROM signing_keys WHERE project_id = @project_id AND state = 'retiring';

-- name: RetireActiveSigningKey :one
-- The active key keeps signing, next to the new one, until the grace
-- period ends (by the database clock).
UPDATE signing_keys
SET state = 'retiring',
    expires_at = now() + make_interval(secs => @grace_seconds::float8)
WHERE project_id = @project_id AND state = 'active'
RETURNING *;

-- name: DeleteRetiringSigningKey :execrows
DELETE FROM signing_keys WHERE project_id = @project_id AND id = @id AND state = 'retiring';

-- name: GetSigningKeyState :one
SELECT state FROM signing_keys WHERE project_id = @project_id AND id = @id;

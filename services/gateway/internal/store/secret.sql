-- Re-sealing the secrets at rest (internal/reseal): rows whose secret is
-- sealed under a key other than the keyring's first (current_prefix is
-- "v1:<first key id>:"), in batches by id. Each write is conditional on the
-- values it replaces, so that a change made meanwhile (a rotation, a new
-- Authorization value) is never undone: such a row is left for the next
-- pass.

-- name: SigningKeysToSeal :many
SELECT id, secret_sealed
FROM signing_keys
WHERE id > @after
  AND NOT starts_with(secret_sealed, @current_prefix::text)
ORDER BY id
LIMIT @max_rows;

-- name: SealSigningKey :execrows
UPDATE signing_keys
SET secret_sealed = @secret_sealed
WHERE id = @id
  AND secret_sealed = @old_secret_sealed;

-- name: ProjectsToSeal :many
SELECT id, authorization_header_sealed, async_secret_sealed
FROM projects
WHERE id > @after
  AND (NOT starts_with(authorization_header_sealed, @current_prefix::text)
       OR NOT starts_with(async_secret_sealed, @current_prefix::text))
ORDER BY id
LIMIT @max_rows;

-- name: SealProject :execrows
UPDATE projects
SET authorization_header_sealed = sqlc.narg(authorization_header_sealed)::text,
    async_secret_sealed = @async_secret_sealed
WHERE id = @id
  AND authorization_header_sealed IS NOT DISTINCT FROM sqlc.narg(old_authorization_header_sealed)::text
  AND async_secret_sealed = @old_async_secret_sealed;

-- name: ChannelsToSeal :many
SELECT id, config_sealed
FROM notification_channels
WHERE id > @after
  AND NOT starts_with(config_sealed, @current_prefix::text)
ORDER BY id
LIMIT @max_rows;

-- name: SealChannel :execrows
UPDATE notification_channels
SET config_sealed = @config_sealed
WHERE id = @id
  AND config_sealed = @old_config_sealed;

-- name: LatestSigningKeySecret :one
-- The newest signing key's sealed secret: at start, the service checks
-- that its keyring opens what the database holds.
SELECT id, secret_sealed FROM signing_keys ORDER BY created_at DESC LIMIT 1;

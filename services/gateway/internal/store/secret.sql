-- Sealing and re-sealing the secrets at rest (internal/reseal,
-- migration 00013): rows whose secret is still in plain text, or sealed
-- under a key other than the keyring's first (current_prefix is
-- "v1:<first key id>:"), in batches by id. Each write is conditional on the
-- values it replaces, so that a change made meanwhile (a rotation, a new
-- Authorization value) is never undone: such a row is left for the next
-- pass.

-- name: SigningKeysToSeal :many
SELECT id, secret, secret_sealed
FROM signing_keys
WHERE id > @after
  AND (secret IS NOT NULL OR NOT starts_with(secret_sealed, @current_prefix::text))
ORDER BY id
LIMIT @max_rows;

-- name: SealSigningKey :execrows
UPDATE signing_keys
SET secret = NULL, secret_sealed = @secret_sealed
WHERE id = @id
  AND secret IS NOT DISTINCT FROM sqlc.narg(old_secret)::text
  AND secret_sealed IS NOT DISTINCT FROM sqlc.narg(old_secret_sealed)::text;

-- name: ProjectsToSeal :many
SELECT id, authorization_header, authorization_header_sealed, async_secret, async_secret_sealed
FROM projects
WHERE id > @after
  AND (authorization_header IS NOT NULL OR async_secret IS NOT NULL
       OR NOT starts_with(authorization_header_sealed, @current_prefix::text)
       OR NOT starts_with(async_secret_sealed, @current_prefix::text))
ORDER BY id
LIMIT @max_rows;

-- name: SealProject :execrows
UPDATE projects
SET authorization_header = NULL, authorization_header_sealed = sqlc.narg(authorization_header_sealed)::text,
    async_secret = NULL, async_secret_sealed = @async_secret_sealed
WHERE id = @id
  AND authorization_header IS NOT DISTINCT FROM sqlc.narg(old_authorization_header)::text
  AND authorization_header_sealed IS NOT DISTINCT FROM sqlc.narg(old_authorization_header_sealed)::text
  AND async_secret IS NOT DISTINCT FROM sqlc.narg(old_async_secret)::bytea
  AND async_secret_sealed IS NOT DISTINCT FROM sqlc.narg(old_async_secret_sealed)::text;

-- name: ChannelsToSeal :many
SELECT id, config, config_sealed
FROM notification_channels
WHERE id > @after
  AND (config IS NOT NULL OR NOT starts_with(config_sealed, @current_prefix::text))
ORDER BY id
LIMIT @max_rows;

-- name: SealChannel :execrows
UPDATE notification_channels
SET config = NULL, config_sealed = @config_sealed
WHERE id = @id
  AND config IS NOT DISTINCT FROM sqlc.narg(old_config)::jsonb
  AND config_sealed IS NOT DISTINCT FROM sqlc.narg(old_config_sealed)::text;

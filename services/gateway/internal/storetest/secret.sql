-- Test fixtures of the secrets at rest (internal/reseal): rows as they
-- were stored before migration 00013, and read-backs of what is stored.

-- name: MakeProjectSecretsPlainForTest :exec
UPDATE projects
SET authorization_header = sqlc.narg(authorization_header), authorization_header_sealed = NULL,
    async_secret = @async_secret, async_secret_sealed = NULL
WHERE id = @id;

-- name: InsertPlainSigningKeyForTest :exec
-- A retiring key in plain text, as before migration 00013.
INSERT INTO signing_keys (id, project_id, secret, state, expires_at)
VALUES (@id, @project_id, @secret, 'retiring', now() + interval '1 hour');

-- name: InsertPlainChannelForTest :exec
INSERT INTO notification_channels (id, project_id, name, kind, config)
VALUES (@id, @project_id, @name, @kind, @config);

-- name: CountPlainSecretsForTest :one
-- Secrets still stored in plain text, in any of the sealed columns' tables.
SELECT ((SELECT count(*) FROM signing_keys WHERE secret IS NOT NULL)
      + (SELECT count(*) FROM projects WHERE authorization_header IS NOT NULL OR async_secret IS NOT NULL)
      + (SELECT count(*) FROM notification_channels WHERE config IS NOT NULL))::bigint AS plain;

-- name: SealedSecretsForTest :many
-- Every sealed value stored.
SELECT secret_sealed::text AS sealed FROM signing_keys WHERE secret_sealed IS NOT NULL
UNION ALL SELECT authorization_header_sealed FROM projects WHERE authorization_header_sealed IS NOT NULL
UNION ALL SELECT async_secret_sealed FROM projects WHERE async_secret_sealed IS NOT NULL
UNION ALL SELECT config_sealed FROM notification_channels WHERE config_sealed IS NOT NULL;

-- name: DumpSecretTablesForTest :many
-- Every row of the tables that hold secrets, as text, to search for a
-- plaintext.
SELECT t::text AS row FROM projects AS t
UNION ALL SELECT t::text FROM signing_keys AS t
UNION ALL SELECT t::text FROM notification_channels AS t
UNION ALL SELECT t::text FROM alerts AS t
UNION ALL SELECT t::text FROM alert_send_attempts AS t
UNION ALL SELECT t::text FROM hook_attempts AS t;

-- Test read-backs of the secrets at rest (internal/reseal): what is stored.

-- name: SealedSecretsForTest :many
-- Every sealed value stored.
SELECT secret_sealed AS sealed FROM signing_keys
UNION ALL SELECT authorization_header_sealed FROM projects WHERE authorization_header_sealed IS NOT NULL
UNION ALL SELECT async_secret_sealed FROM projects
UNION ALL SELECT config_sealed FROM notification_channels;

-- name: DumpSecretTablesForTest :many
-- Every row of the tables that hold secrets, as text, to search for a
-- plaintext.
SELECT t::text AS row FROM projects AS t
UNION ALL SELECT t::text FROM signing_keys AS t
UNION ALL SELECT t::text FROM notification_channels AS t
UNION ALL SELECT t::text FROM alerts AS t
UNION ALL SELECT t::text FROM alert_send_attempts AS t
UNION ALL SELECT t::text FROM hook_attempts AS t;

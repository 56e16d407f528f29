-- The plaintext columns of the secrets at rest go (docs/security.md,
-- "Secrets at rest"). Migration 00013 kept them beside the sealed ones for
-- values written before it, which the gateway sealed at start-up, and for
-- gateways of an earlier build during an upgrade; no release ever stored a
-- secret in plain text, so nothing reads them any more. Each secret is now
-- in its *_sealed column only, and every row has it, but the optional
-- Authorization value.
--
-- A value still in plain text would be lost, and no code seals it any more:
-- the migration refuses instead (start a gateway of the previous build
-- once, which seals every value at start-up, then migrate). The tables are
-- small (projects, their keys and channels), so SET NOT NULL's check of
-- every row is brief.
--
-- Services built before this migration read the dropped columns, so it is
-- not readable by them: stop them before it runs (docs/operations.md,
-- "Rolling upgrades").

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM signing_keys WHERE secret IS NOT NULL)
       OR EXISTS (SELECT 1 FROM projects WHERE authorization_header IS NOT NULL OR async_secret IS NOT NULL)
       OR EXISTS (SELECT 1 FROM notification_channels WHERE config IS NOT NULL) THEN
        RAISE EXCEPTION 'secrets still stored in plain text: start a gateway of the previous build once to seal them, then migrate';
    END IF;
END
$$;
-- +goose StatementEnd

ALTER TABLE signing_keys
    DROP CONSTRAINT signing_keys_secret_stored_check,
    DROP COLUMN secret,
    ALTER COLUMN secret_sealed SET NOT NULL;

ALTER TABLE projects
    DROP CONSTRAINT projects_authorization_header_stored_check,
    DROP CONSTRAINT projects_async_secret_stored_check,
    DROP COLUMN authorization_header,
    DROP COLUMN async_secret,
    ALTER COLUMN async_secret_sealed SET NOT NULL;

ALTER TABLE notification_channels
    DROP CONSTRAINT notification_channels_config_stored_check,
    DROP COLUMN config,
    ALTER COLUMN config_sealed SET NOT NULL;

-- +goose Down
-- The plaintext columns come back empty, with the checks that one of each
-- pair is set; async_secret's default (migration 00007) is set once the
-- column is in, so that it fills no existing row.
ALTER TABLE notification_channels
    ALTER COLUMN config_sealed DROP NOT NULL,
    ADD COLUMN config jsonb,
    ADD CONSTRAINT notification_channels_config_stored_check CHECK ((config IS NULL) <> (config_sealed IS NULL));

ALTER TABLE projects
    ALTER COLUMN async_secret_sealed DROP NOT NULL,
    ADD COLUMN authorization_header text,
    ADD COLUMN async_secret bytea CONSTRAINT projects_async_secret_check CHECK (length(async_secret) >= 32),
    ADD CONSTRAINT projects_authorization_header_stored_check
        CHECK (authorization_header IS NULL OR authorization_header_sealed IS NULL),
    ADD CONSTRAINT projects_async_secret_stored_check
        CHECK ((async_secret IS NULL) <> (async_secret_sealed IS NULL));
ALTER TABLE projects
    ALTER COLUMN async_secret SET DEFAULT decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex');

ALTER TABLE signing_keys
    ALTER COLUMN secret_sealed DROP NOT NULL,
    ADD COLUMN secret text,
    ADD CONSTRAINT signing_keys_secret_stored_check CHECK ((secret IS NULL) <> (secret_sealed IS NULL));

-- +goose Up

-- Secrets at rest (docs/security.md "Secrets at rest"): the secrets Sundial
-- must read back are stored sealed (package secretbox: AES-256-GCM under a
-- key from SUNDIAL_SECRET_KEYS, bound to their column and row) in the new
-- *_sealed columns, as text "v1:<key id>:<base64>". SQL cannot seal (it has
-- no key), so this migration only makes room: the plaintext columns become
-- nullable, and the gateway seals what is left in them (and re-seals values
-- under a key other than the first) at start-up and with
-- `gateway admin reseal-secrets`, clearing the plaintext as it goes. Until
-- then the readers accept either column; each row has one or the other.
--
-- async_secret keeps its default for the gateways of the previous release
-- that may still create projects during an upgrade; the new gateway writes
-- NULL there and the sealed value instead.
--
-- Catalogue-only changes and NOT VALID checks validated afterwards, so the
-- locks are brief.
ALTER TABLE signing_keys
    ADD COLUMN secret_sealed text,
    ALTER COLUMN secret DROP NOT NULL,
    ADD CONSTRAINT signing_keys_secret_stored_check CHECK ((secret IS NULL) <> (secret_sealed IS NULL)) NOT VALID;
ALTER TABLE signing_keys VALIDATE CONSTRAINT signing_keys_secret_stored_check;

ALTER TABLE projects
    ADD COLUMN authorization_header_sealed text,
    ADD COLUMN async_secret_sealed text,
    ALTER COLUMN async_secret DROP NOT NULL,
    ADD CONSTRAINT projects_authorization_header_stored_check
        CHECK (authorization_header IS NULL OR authorization_header_sealed IS NULL) NOT VALID,
    ADD CONSTRAINT projects_async_secret_stored_check
        CHECK ((async_secret IS NULL) <> (async_secret_sealed IS NULL)) NOT VALID;
ALTER TABLE projects VALIDATE CONSTRAINT projects_authorization_header_stored_check;
ALTER TABLE projects VALIDATE CONSTRAINT projects_async_secret_stored_check;

ALTER TABLE notification_channels
    ADD COLUMN config_sealed text,
    ALTER COLUMN config DROP NOT NULL,
    ADD CONSTRAINT notification_channels_config_stored_check
        CHECK ((config IS NULL) <> (config_sealed IS NULL)) NOT VALID;
ALTER TABLE notification_channels VALIDATE CONSTRAINT notification_channels_config_stored_check;

-- +goose Down
-- The previous schema holds plaintext only (and the previous release reads
-- nothing else), so Down refuses while any value is sealed rather than lose it.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM signing_keys WHERE secret_sealed IS NOT NULL)
       OR EXISTS (SELECT 1 FROM projects WHERE authorization_header_sealed IS NOT NULL OR async_secret_sealed IS NOT NULL)
       OR EXISTS (SELECT 1 FROM notification_channels WHERE config_sealed IS NOT NULL) THEN
        RAISE EXCEPTION 'sealed secrets present: the previous schema cannot hold them';
    END IF;
END
$$;
-- +goose StatementEnd
ALTER TABLE notification_channels
    DROP CONSTRAINT notification_channels_config_stored_check,
    ALTER COLUMN config SET NOT NULL,
    DROP COLUMN config_sealed;
ALTER TABLE projects
    DROP CONSTRAINT projects_async_secret_stored_check,
    DROP CONSTRAINT projects_authorization_header_stored_check,
    ALTER COLUMN async_secret SET NOT NULL,
    DROP COLUMN async_secret_sealed,
    DROP COLUMN authorization_header_sealed;
ALTER TABLE signing_keys
    DROP CONSTRAINT signing_keys_secret_stored_check,
    ALTER COLUMN secret SET NOT NULL,
    DROP COLUMN secret_sealed;

-- A project's delivery signature headers (docs/security.md, "Standard
-- Webhooks signatures"): 'sundial' (Sundial-Signature and its companions,
-- the default), 'standard' (webhook-id, webhook-timestamp and
-- webhook-signature of the Standard Webhooks specification instead) or
-- 'both'. The words are pkg/signing's SignatureScheme values.

-- +goose Up
ALTER TABLE projects ADD COLUMN signature_scheme text NOT NULL DEFAULT 'sundial'
    CHECK (signature_scheme IN ('sundial', 'standard', 'both'));

-- +goose Down
ALTER TABLE projects DROP COLUMN signature_scheme;

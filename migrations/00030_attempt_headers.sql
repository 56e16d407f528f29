-- The headers of each attempt's request and answer (docs/choices.md,
-- "Attempt headers"): an object of header name to the list of its values,
-- bounded and redacted by the dispatcher before they reach the scheduler,
-- which writes them with the attempt. NULL where none was recorded (attempts
-- from before this migration, a request never prepared, no answer). The
-- omitted counts are the header lines the bounds left out.
--
-- Nullable columns and constant defaults, without CHECK constraints: adding
-- them neither rewrites nor scans hook_attempts, and the services already
-- running keep writing attempts without them.

-- +goose Up
ALTER TABLE hook_attempts
    ADD COLUMN request_headers jsonb,
    ADD COLUMN response_headers jsonb,
    ADD COLUMN request_headers_omitted integer NOT NULL DEFAULT 0,
    ADD COLUMN response_headers_omitted integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE hook_attempts
    DROP COLUMN response_headers_omitted,
    DROP COLUMN request_headers_omitted,
    DROP COLUMN response_headers,
    DROP COLUMN request_headers;

-- +goose Up

-- Async hooks (docs/product.md, "Async answers"): a receiver that answers 202
-- holds its hook pending until it POSTs the ack or nack URL of that
-- delivery, or until the async timeout passes.
--
-- The URLs carry a token, base64url(HMAC-SHA256(async_secret,
-- "<hook id>.<lease_seq>")), so no row is written per delivery to make one.
-- The secret is 32 random bytes per project: two gen_random_uuid() values
-- (version 4, from the server's strong random source, 122 random bits each)
-- with their fixed version and variant bits included; 244 random bits. A
-- volatile default is evaluated for every existing row (the projects table
-- is small, so the rewrite this needs is brief).
ALTER TABLE projects
    ADD COLUMN async_secret bytea NOT NULL
        DEFAULT decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex')
        CONSTRAINT projects_async_secret_check CHECK (length(async_secret) >= 32);

-- A hook waiting for an async answer is pending with no run_at (so no claim
-- re-drives it) and async_deadline set: when the deadline passes, or when a
-- nack sets it to now, a scheduler applies the attempt's failure. The lease
-- that delivered it stays in lease_seq; lease_expires_at is cleared, which
-- makes any further result of that lease stale.
ALTER TABLE hooks ADD COLUMN async_deadline timestamptz;

-- The old rule (pending or retry exactly when run_at is set) gains the
-- waiting state. Added NOT VALID, then validated, so that existing rows (all
-- with async_deadline NULL, which the new rule accepts as before) are checked
-- without blocking writes.
ALTER TABLE hooks DROP CONSTRAINT hooks_check;
ALTER TABLE hooks ADD CONSTRAINT hooks_run_at_check CHECK (
    CASE WHEN async_deadline IS NULL
        THEN (status IN ('pending', 'retry')) = (run_at IS NOT NULL)
        ELSE status = 'pending' AND run_at IS NULL
    END
) NOT VALID;
ALTER TABLE hooks VALIDATE CONSTRAINT hooks_run_at_check;

-- The schedulers' sweep for expired waits and nacks: only waiting hooks are in it.
CREATE INDEX hooks_async_deadline_idx ON hooks (async_deadline) WHERE async_deadline IS NOT NULL;

-- The async side of an attempt answered 202:
--   async_state      waiting (for an answer), acked, nacked, or expired (the
--                    timeout passed first); NULL for an attempt not answered 202;
--   async_deadline   when the wait ends (a nack moves it to the nack's time);
--   async_timeout_secs the wait granted (the 202's Sundial-Async-Timeout or
--                    the project's async_timeout_secs), for the failure text;
--   ack_body         the JSON the receiver POSTed to the ack URL, if any.
ALTER TABLE hook_attempts
    ADD COLUMN async_state text
        CONSTRAINT hook_attempts_async_state_check CHECK (async_state IN ('waiting', 'acked', 'nacked', 'expired')),
    ADD COLUMN async_deadline timestamptz,
    ADD COLUMN async_timeout_secs integer,
    ADD COLUMN ack_body jsonb;

-- An ack or nack finds its attempt by the lease in its URL.
CREATE INDEX hook_attempts_lease_idx ON hook_attempts (hook_id, lease_seq);

-- +goose Down
DROP INDEX hook_attempts_lease_idx;
ALTER TABLE hook_attempts
    DROP COLUMN ack_body,
    DROP COLUMN async_timeout_secs,
    DROP COLUMN async_deadline,
    DROP COLUMN async_state;
DROP INDEX hooks_async_deadline_idx;
-- Waiting hooks cannot be kept in the old shape: they become due at once
-- (the attempt is redelivered; deliveries are at least once).
UPDATE hooks SET run_at = now(), async_deadline = NULL WHERE async_deadline IS NOT NULL;
ALTER TABLE hooks DROP CONSTRAINT hooks_run_at_check;
ALTER TABLE hooks ADD CONSTRAINT hooks_check CHECK ((status IN ('pending', 'retry')) = (run_at IS NOT NULL));
ALTER TABLE hooks DROP COLUMN async_deadline;
ALTER TABLE projects DROP COLUMN async_secret;

-- Test fixtures and read-backs beside store/keys.sql: only tests and
-- benchmarks use them.

-- name: SetAPIKeyLastUsedForTest :exec
-- Test fixture: only tests use the queries named ...ForTest.
UPDATE api_keys
SET last_used_at = now() + make_interval(secs => @offset_seconds::float8)
WHERE id = @id;

-- name: SetSigningKeyExpiryForTest :exec
-- Test fixture: moves a retiring key's expiry offset_seconds from now.
UPDATE signing_keys
SET expires_at = now() + make_interval(secs => @offset_seconds::float8)
WHERE id = @id AND state = 'retiring';

-- name: CountSigningKeysForTest :one
-- Test fixture: every stored key of a project, expired ones included.
SELECT count(*) FROM signing_keys WHERE project_id = @project_id;

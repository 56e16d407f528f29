-- name: GetDeliveryCredentials :many
-- What a delivery of the project's hooks is signed and authorised with: the
-- project's Authorization header value, the secret its async ack and nack
-- URLs' tokens are made with (package asyncurl), and its usable signing keys, the
-- active key first, then retiring keys still inside their grace period
-- (newest first). A project without usable keys gives one row with NULL key
-- columns; no row at all means the project does not exist.
SELECT p.authorization_header, p.async_secret, k.secret, k.state
FROM projects AS p
LEFT JOIN signing_keys AS k
    ON k.project_id = p.id
   AND (k.state = 'active' OR (k.state = 'retiring' AND k.expires_at > now()))
WHERE p.id = sqlc.arg(project_id)
ORDER BY (k.state = 'active') DESC, k.expires_at DESC;

-- name: InsertProjectForTest :exec
-- Test fixture (the gateway creates projects in production); only tests use
-- the queries named ...ForTest.
INSERT INTO projects (id, name, domain, authorization_header)
VALUES (sqlc.arg(id), sqlc.arg(name), sqlc.arg(domain), sqlc.narg(authorization_header));

-- name: InsertSigningKeyForTest :exec
-- A signing key that expires expires_in_seconds from the database's now
-- (negative: already expired); NULL for the active key.
INSERT INTO signing_keys (id, project_id, secret, state, expires_at)
VALUES (
    sqlc.arg(id), sqlc.arg(project_id), sqlc.arg(secret), sqlc.arg(state),
    now() + make_interval(secs => sqlc.narg(expires_in_seconds)::float8)
);

-- Test fixtures and read-backs beside store/queries.sql: only tests and
-- benchmarks use them.

-- name: InsertProjectForTest :exec
-- Test fixture (the gateway creates projects in production); only tests use
-- the queries named ...ForTest.
-- Each secret is given either sealed or in plain text (as before migration 00013).
INSERT INTO projects (id, name, domain, authorization_header, authorization_header_sealed, async_secret, async_secret_sealed,
                      max_concurrency)
VALUES (sqlc.arg(id), sqlc.arg(name), sqlc.arg(domain), sqlc.narg(authorization_header), sqlc.narg(authorization_header_sealed),
        sqlc.narg(async_secret), sqlc.narg(async_secret_sealed), sqlc.narg(max_concurrency));

-- name: InsertSigningKeyForTest :exec
-- A signing key that expires expires_in_seconds from the database's now
-- (negative: already expired); NULL for the active key. The secret is
-- given sealed or in plain text (as before migration 00013).
INSERT INTO signing_keys (id, project_id, secret, secret_sealed, state, expires_at)
VALUES (
    sqlc.arg(id), sqlc.arg(project_id), sqlc.narg(secret), sqlc.narg(secret_sealed), sqlc.arg(state),
    now() + make_interval(secs => sqlc.narg(expires_in_seconds)::float8)
);

-- Test fixtures and read-backs beside store/queries.sql: only tests and
-- benchmarks use them.

-- name: InsertProjectForTest :exec
-- Test fixture (the gateway creates projects in production); only tests use
-- the queries named ...ForTest.
-- Each secret is given sealed (package secretbox).
INSERT INTO projects (id, name, domain, authorization_header_sealed, async_secret_sealed, max_concurrency)
VALUES (sqlc.arg(id), sqlc.arg(name), sqlc.arg(domain), sqlc.narg(authorization_header_sealed),
        sqlc.arg(async_secret_sealed), sqlc.narg(max_concurrency));

-- name: InsertSigningKeyForTest :exec
-- A signing key that expires expires_in_seconds from the database's now
-- (negative: already expired); NULL for the active key. The secret is
-- given sealed.
INSERT INTO signing_keys (id, project_id, secret_sealed, state, expires_at)
VALUES (
    sqlc.arg(id), sqlc.arg(project_id), sqlc.arg(secret_sealed), sqlc.arg(state),
    now() + make_interval(secs => sqlc.narg(expires_in_seconds)::float8)
);

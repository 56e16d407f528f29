-- Test fixtures of local times that follow the tz database.

-- name: InsertLocalTimeHookForTest :one
-- A pending hook as the gateway writes one created with postAtLocal +
-- timezone: post_at is where tz_version's rules put post_at_local. attempts
-- and lease_expires_at stand for a hook attempted or claimed since.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, run_at, post_at_local, timezone, tz_version,
    attempts, lease_expires_at)
VALUES (
    sqlc.arg(id), sqlc.arg(project_id), '/local', sqlc.arg(domain), '{}', sqlc.arg(post_at), sqlc.arg(post_at),
    sqlc.arg(post_at_local)::timestamp, sqlc.arg(timezone), sqlc.arg(tz_version), sqlc.arg(attempts),
    sqlc.narg(lease_expires_at)
)
RETURNING *;

-- name: InsertPlannedSequenceForTest :one
-- An active sequence from start_at whose next slot a gateway of release
-- tz_version planned at next_run_at.
INSERT INTO sequences (id, project_id, name, schedule, steps, start_at, catch_up, overlap, next_run_at, tz_version)
VALUES (
    sqlc.arg(id), sqlc.arg(project_id), sqlc.arg(name), sqlc.arg(schedule), '[{"name":"a","path":"/a"}]',
    sqlc.arg(start_at), 'none', 'allow', sqlc.arg(next_run_at), sqlc.arg(tz_version)
)
RETURNING *;

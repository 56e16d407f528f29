-- name: GetProjectPlan :one
-- What creating a hook needs to know about its project.
SELECT domain, plan_quota, plan_hard_cap_percent
FROM projects
WHERE id = @id;

-- name: SetProjectPlan :execrows
UPDATE projects
SET plan_quota = @plan_quota,
    plan_hard_cap_percent = @plan_hard_cap_percent,
    updated_at = now()
WHERE id = @id;

-- name: InsertHook :one
-- post_at is the given instant, or the database clock plus post_in_seconds
-- when none is given: the database clock decides when a hook is due.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, run_at, retry_override)
SELECT @id::uuid, @project_id::uuid, @path::text, @domain::text, @data::jsonb,
       due.at, due.at, sqlc.narg(retry_override)::jsonb
FROM (
    SELECT COALESCE(
        sqlc.narg(post_at)::timestamptz,
        now() + make_interval(secs => sqlc.narg(post_in_seconds)::bigint)
    ) AS at
) AS due
RETURNING *;

-- name: GetHook :one
SELECT * FROM hooks WHERE project_id = @project_id AND id = @id;

-- name: DeleteHook :execrows
-- Attempt rows go with the hook (ON DELETE CASCADE).
DELETE FROM hooks WHERE project_id = @project_id AND id = @id;

-- name: DatabaseNow :one
-- The database clock: readiness checks that the database answers with it.
SELECT now()::timestamptz AS now;

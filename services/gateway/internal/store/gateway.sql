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

-- name: SetProjectMaxRetentionDays :execrows
-- The plan's bound of retention_days (gateway admin set-plan
-- --max-retention-days). A project's retention_days above a lowered bound
-- stays: the cleaner keeps hooks no longer than the bound.
UPDATE projects
SET plan_max_retention_days = @plan_max_retention_days,
    updated_at = now()
WHERE id = @id;

-- name: InsertHooks :many
-- The hooks of a create batch (internal/hook; a single create is a batch
-- of one) in one statement: element i
-- of every array describes hook i. Its domain is its project's. post_at is
-- post_ats[i] where post_in_seconds[i] is negative, else the database clock
-- plus that many seconds. data and retry_overrides are JSON text; an empty
-- retry override is none (NULL), and so are an empty key, empty tags, an
-- empty ordering key, and an empty post_at_local and timezone (a hook not
-- scheduled by local time; one that is also gets tz_version, the release
-- that resolved it).
-- tags[i] is hook i's tags as an array literal ({a,b}): a tag's
-- characters need no quoting in one (hook.ValidateTag), and an array of
-- arrays would not unnest hook by hook. A hook of a project that does not exist
-- is not inserted and not returned. The ids come as text: pgx encodes a
-- []uuid.UUID element by element through database/sql's Valuer (a string
-- it then parses back), which cost the gateway more than the rest of the
-- statement; PostgreSQL's text-to-uuid cast is cheap.
-- The rows are inserted in the arrays' order (ORDER BY ord): the join with
-- projects is a hash join that otherwise emits them in its hash table's
-- order, and the ids, UUIDv7 in request order, then land all over the
-- primary key and the (project, created_at, id) indexes instead of at
-- their right edge, which made a batch markedly slower in PostgreSQL
-- (docs/benchmarks.md, "Batch intake").
INSERT INTO hooks (id, project_id, path, domain, data, post_at, run_at, retry_override, key, tags,
    post_at_local, timezone, tz_version, ordering_key)
SELECT n.id, n.project_id, n.path, p.domain, n.data::jsonb, due.at, due.at, NULLIF(n.retry_override, '')::jsonb,
    NULLIF(n.key, ''), NULLIF(n.tags, '')::text[],
    NULLIF(n.post_at_local, '')::timestamp, NULLIF(n.timezone, ''), CASE WHEN n.timezone <> '' THEN @tz_version::text END,
    NULLIF(n.ordering_key, '')
FROM (
    SELECT unnest(@ids::text[])::uuid AS id,
        unnest(@project_ids::text[])::uuid AS project_id,
        unnest(@paths::text[]) AS path,
        unnest(@datas::text[]) AS data,
        unnest(@post_ats::timestamptz[]) AS post_at,
        unnest(@post_in_seconds::bigint[]) AS post_in_seconds,
        unnest(@retry_overrides::text[]) AS retry_override,
        unnest(@keys::text[]) AS key,
        unnest(@tags::text[]) AS tags,
        unnest(@post_at_locals::text[]) AS post_at_local,
        unnest(@timezones::text[]) AS timezone,
        unnest(@ordering_keys::text[]) AS ordering_key,
        generate_series(1, cardinality(@ids::text[])) AS ord
) AS n
JOIN projects AS p ON p.id = n.project_id
CROSS JOIN LATERAL (
    SELECT CASE
        WHEN n.post_in_seconds < 0 THEN n.post_at
        ELSE now() + make_interval(secs => n.post_in_seconds)
    END AS at
) AS due
ORDER BY n.ord
RETURNING *;

-- name: InsertProjectHooks :many
-- InsertHooks for hooks of one project (POST /v1/hooks/batch): the project
-- is one value, its domain read once, and there is no join, so the rows go
-- in in the arrays' order (ids ascending, appended to every index) and
-- nothing casts or hashes a project id per hook, which makes a batch
-- cheaper in PostgreSQL than through InsertHooks. Nothing is inserted when
-- the project does not exist.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, run_at, retry_override, key, tags,
    post_at_local, timezone, tz_version, ordering_key)
SELECT n.id, p.project_id, n.path, p.domain, n.data::jsonb, due.at, due.at, NULLIF(n.retry_override, '')::jsonb,
    NULLIF(n.key, ''), NULLIF(n.tags, '')::text[],
    NULLIF(n.post_at_local, '')::timestamp, NULLIF(n.timezone, ''), CASE WHEN n.timezone <> '' THEN @tz_version::text END,
    NULLIF(n.ordering_key, '')
FROM (
    SELECT unnest(@ids::text[])::uuid AS id,
        unnest(@paths::text[]) AS path,
        unnest(@datas::text[]) AS data,
        unnest(@post_ats::timestamptz[]) AS post_at,
        unnest(@post_in_seconds::bigint[]) AS post_in_seconds,
        unnest(@retry_overrides::text[]) AS retry_override,
        unnest(@keys::text[]) AS key,
        unnest(@tags::text[]) AS tags,
        unnest(@post_at_locals::text[]) AS post_at_local,
        unnest(@timezones::text[]) AS timezone,
        unnest(@ordering_keys::text[]) AS ordering_key
) AS n
CROSS JOIN (SELECT pr.id AS project_id, pr.domain FROM projects AS pr WHERE pr.id = @project_id) AS p
CROSS JOIN LATERAL (
    SELECT CASE
        WHEN n.post_in_seconds < 0 THEN n.post_at
        ELSE now() + make_interval(secs => n.post_in_seconds)
    END AS at
) AS due
RETURNING *;

-- name: GetHook :one
SELECT * FROM hooks WHERE project_id = @project_id AND id = @id;

-- name: GetHooksByIDs :many
-- The hooks of the project among ids (text: see InsertHooks), in no order;
-- deleted ones are missing.
SELECT * FROM hooks WHERE project_id = @project_id AND id = ANY(CAST(@ids::text[] AS uuid[]));

-- name: LockHookKey :exec
-- Serializes the creates of one key of a project until the transaction
-- ends, so that two of them replace one after the other instead of both
-- finding the same hook and one failing on hooks_live_key_idx.
SELECT pg_advisory_xact_lock(hashtextextended(CAST(sqlc.arg(project_id)::uuid AS text) || '/' || sqlc.arg(hook_key)::text, 0));

-- name: ReplaceKeyedHook :many
-- Deletes the project's unfinished hook of key if it was never claimed
-- (pending, no lease, no attempt: it never left the database), and
-- returns that hook's id and whether it was deleted; nothing when the key
-- names no unfinished hook. The row is locked first, so a claim running
-- at the same time either waits and then finds it gone, or leased it
-- before and it stays. Attempt rows go with it (migration 00026's
-- trigger).
WITH live AS (
    SELECT h.id, (h.status = 'pending' AND h.lease_expires_at IS NULL AND h.attempts = 0) AS unclaimed
    FROM hooks AS h
    WHERE h.project_id = @project_id AND h.key = @hook_key::text AND h.status IN ('pending', 'retry')
    FOR UPDATE
), gone AS (
    DELETE FROM hooks AS h
    USING live
    WHERE h.id = live.id AND live.unclaimed
    RETURNING h.id
)
SELECT live.id, live.unclaimed::boolean AS replaced FROM live;

-- name: GetHookByKey :one
-- The hook a key names: the project's unfinished hook of key, or when
-- there is none the newest finished one (hooks_key_idx).
SELECT * FROM hooks
WHERE project_id = @project_id AND key = @hook_key::text
ORDER BY status IN ('pending', 'retry') DESC, created_at DESC
LIMIT 1;

-- name: DeleteHookByKey :many
-- Deletes the hook GetHookByKey returns, if any, and returns its id.
-- Attempt rows go with it (migration 00026's trigger).
DELETE FROM hooks
WHERE id = (
    SELECT k.id FROM hooks AS k
    WHERE k.project_id = @project_id AND k.key = @hook_key::text
    ORDER BY k.status IN ('pending', 'retry') DESC, k.created_at DESC
    LIMIT 1
)
RETURNING id;

-- name: DeleteHook :execrows
-- Attempt rows go with the hook (migration 00026's trigger).
DELETE FROM hooks WHERE project_id = @project_id AND id = @id;

-- name: DatabaseNow :one
-- The database clock: readiness checks that the database answers with it.
SELECT now()::timestamptz AS now;

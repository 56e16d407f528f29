-- Bulk retry, replay and cancel (internal/bulk). Each action selects hooks
-- either by id or by a time range on post_at with optional path, sequence
-- and tags (a hook with every tag given) filters, and only ever within the
-- caller's project. A range
-- selection takes the earliest hooks first (post_at, then id) up to the
-- limit, and locks them, so that a hook changed by a concurrent transaction
-- is re-checked rather than acted on in a stale state.
--
-- Range selections rely on the index (project_id, status, post_at, id):
-- each names its status.

-- name: RetryFailedHooksByID :many
-- A failed hook gets a fresh retry budget: retry_budget_base remembers the
-- attempts already made, so attempt numbers keep counting up and the
-- history stays. It is due now by the database clock; the last error and
-- tryAt stay until the next attempt replaces them. A failed hook with a key
-- is retried only while it is the newest hook of its key and none of them
-- is unfinished: a key names one unfinished hook (migration 00031), and
-- two failed hooks of one key retried together would both be.
--
-- An edit (new_path, new_data, new_post_at, each NULL to keep the hook's)
-- changes the hook itself; its attempts stay its history. A new_post_at
-- makes it due then (in the past: due now, as a created hook's), an
-- instant: a local time it was scheduled by no longer applies.
UPDATE hooks AS h
SET status            = 'pending',
    retry_budget_base = h.attempts,
    path              = COALESCE(sqlc.narg(new_path)::text, h.path),
    data              = COALESCE(sqlc.narg(new_data)::jsonb, h.data),
    post_at           = COALESCE(sqlc.narg(new_post_at)::timestamptz, h.post_at),
    run_at            = COALESCE(sqlc.narg(new_post_at)::timestamptz, now()),
    post_at_local     = CASE WHEN sqlc.narg(new_post_at)::timestamptz IS NULL THEN h.post_at_local END,
    timezone          = CASE WHEN sqlc.narg(new_post_at)::timestamptz IS NULL THEN h.timezone END,
    tz_version        = CASE WHEN sqlc.narg(new_post_at)::timestamptz IS NULL THEN h.tz_version END,
    lease_expires_at  = NULL,
    was_notified      = false,
    updated_at        = now()
WHERE h.project_id = @project_id
  AND h.id = ANY(@ids::uuid[])
  AND h.status = 'failed'
  AND (h.key IS NULL OR NOT EXISTS (
      SELECT 1 FROM hooks AS o
      WHERE o.project_id = h.project_id AND o.key = h.key AND o.id <> h.id
            AND (o.status IN ('pending', 'retry') OR (o.created_at, o.id) > (h.created_at, h.id))))
RETURNING h.id;

-- name: RetryFailedHooksInRange :many
-- The selection is materialized: executed again inside the join it would
-- skip the rows this statement has already updated and take the next ones,
-- passing the limit. A hook with a key is retried only as by
-- RetryFailedHooksByID.
WITH sel AS MATERIALIZED (
    SELECT s.id
    FROM hooks AS s
    WHERE s.project_id = @project_id
      AND s.status = 'failed'
      AND (s.key IS NULL OR NOT EXISTS (
          SELECT 1 FROM hooks AS o
          WHERE o.project_id = s.project_id AND o.key = s.key AND o.id <> s.id
            AND (o.status IN ('pending', 'retry') OR (o.created_at, o.id) > (s.created_at, s.id))))
      AND s.post_at >= @start_time AND s.post_at < @end_time
      AND (sqlc.narg(path)::text IS NULL OR s.path = sqlc.narg(path)::text)
      AND (sqlc.narg(path_base)::text IS NULL OR split_part(s.path, '?', 1) = sqlc.narg(path_base)::text)
      AND (sqlc.narg(sequence_id)::uuid IS NULL OR s.sequence_id = sqlc.narg(sequence_id)::uuid)
      AND (sqlc.narg(tags)::text[] IS NULL OR s.tags @> sqlc.narg(tags)::text[])
    ORDER BY s.post_at, s.id
    LIMIT @max_hooks::integer
    FOR UPDATE
)
UPDATE hooks AS h
SET status            = 'pending',
    retry_budget_base = h.attempts,
    path              = COALESCE(sqlc.narg(new_path)::text, h.path),
    data              = COALESCE(sqlc.narg(new_data)::jsonb, h.data),
    post_at           = COALESCE(sqlc.narg(new_post_at)::timestamptz, h.post_at),
    run_at            = COALESCE(sqlc.narg(new_post_at)::timestamptz, now()),
    post_at_local     = CASE WHEN sqlc.narg(new_post_at)::timestamptz IS NULL THEN h.post_at_local END,
    timezone          = CASE WHEN sqlc.narg(new_post_at)::timestamptz IS NULL THEN h.timezone END,
    tz_version        = CASE WHEN sqlc.narg(new_post_at)::timestamptz IS NULL THEN h.tz_version END,
    lease_expires_at  = NULL,
    was_notified      = false,
    updated_at        = now()
FROM sel
WHERE h.id = sel.id AND h.status = 'failed'
RETURNING h.id;

-- name: CancelHooksByID :many
-- Cancelling deletes, as DELETE /v1/hooks/{id} does; attempt rows go with
-- the hook (migration 00026's trigger).
DELETE FROM hooks
WHERE project_id = @project_id
  AND id = ANY(@ids::uuid[])
  AND status IN ('pending', 'retry')
RETURNING id;

-- name: CancelHooksInRange :many
-- Pending and retry hooks are found per status, each in post_at order from
-- the (project_id, status, post_at, id) index, and merged: one scan of the
-- post_at index filtering by status would walk every completed hook of the
-- range first. The chosen rows are then locked and re-checked; the
-- selections are materialized for the same reason as in
-- RetryFailedHooksInRange.
WITH candidate AS MATERIALIZED (
    SELECT c.id
    FROM (
        (SELECT p.id, p.post_at
         FROM hooks AS p
         WHERE p.project_id = @project_id
           AND p.status = 'pending'
           AND p.post_at >= @start_time AND p.post_at < @end_time
           AND (sqlc.narg(path)::text IS NULL OR p.path = sqlc.narg(path)::text)
           AND (sqlc.narg(path_base)::text IS NULL OR split_part(p.path, '?', 1) = sqlc.narg(path_base)::text)
           AND (sqlc.narg(sequence_id)::uuid IS NULL OR p.sequence_id = sqlc.narg(sequence_id)::uuid)
           AND (sqlc.narg(tags)::text[] IS NULL OR p.tags @> sqlc.narg(tags)::text[])
         ORDER BY p.post_at, p.id
         LIMIT @max_hooks::integer)
        UNION ALL
        (SELECT r.id, r.post_at
         FROM hooks AS r
         WHERE r.project_id = @project_id
           AND r.status = 'retry'
           AND r.post_at >= @start_time AND r.post_at < @end_time
           AND (sqlc.narg(path)::text IS NULL OR r.path = sqlc.narg(path)::text)
           AND (sqlc.narg(path_base)::text IS NULL OR split_part(r.path, '?', 1) = sqlc.narg(path_base)::text)
           AND (sqlc.narg(sequence_id)::uuid IS NULL OR r.sequence_id = sqlc.narg(sequence_id)::uuid)
           AND (sqlc.narg(tags)::text[] IS NULL OR r.tags @> sqlc.narg(tags)::text[])
         ORDER BY r.post_at, r.id
         LIMIT @max_hooks::integer)
    ) AS c
    ORDER BY c.post_at, c.id
    LIMIT @max_hooks::integer
), sel AS MATERIALIZED (
    SELECT s.id
    FROM hooks AS s
    WHERE s.id = ANY(ARRAY(SELECT candidate.id FROM candidate))
      AND s.status IN ('pending', 'retry')
    FOR UPDATE
)
DELETE FROM hooks AS h
USING sel
WHERE h.id = sel.id
RETURNING h.id;

-- name: LockCompletedHooksByID :many
-- The completed hooks a replay copies. KEY SHARE keeps them from being
-- deleted until the copies are inserted, without blocking other updates.
SELECT id
FROM hooks
WHERE project_id = @project_id
  AND id = ANY(@ids::uuid[])
  AND status = 'completed'
ORDER BY post_at, id
FOR KEY SHARE;

-- name: LockCompletedHooksInRange :many
SELECT id
FROM hooks
WHERE project_id = @project_id
  AND status = 'completed'
  AND post_at >= @start_time AND post_at < @end_time
  AND (sqlc.narg(path)::text IS NULL OR path = sqlc.narg(path)::text)
  AND (sqlc.narg(path_base)::text IS NULL OR split_part(path, '?', 1) = sqlc.narg(path_base)::text)
  AND (sqlc.narg(sequence_id)::uuid IS NULL OR sequence_id = sqlc.narg(sequence_id)::uuid)
  AND (sqlc.narg(tags)::text[] IS NULL OR tags @> sqlc.narg(tags)::text[])
ORDER BY post_at, id
LIMIT @max_hooks::integer
FOR KEY SHARE;

-- name: InsertReplays :execrows
-- One new hook per (new id, source id) pair: the source's path, domain,
-- data, retryOverride, tags and ordering key, due now by the database
-- clock. Sequence data, the idempotency key and the key are not copied: a
-- replay belongs to no sequence run, was not asked for with an
-- Idempotency-Key, and is not the hook the key names (the key's next hook
-- is the client's to create). The ordering key is copied: a replay is
-- delivered in its key's order, after the key's earlier hooks, as the
-- source was.
--
-- An edit (new_path, new_data, new_post_at, each NULL to keep the source's)
-- applies to every copy; a new_post_at in the past is due now, as a created
-- hook's.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, run_at, retry_override, tags, ordering_key)
SELECT (@new_ids::uuid[])[g.i], h.project_id,
    COALESCE(sqlc.narg(new_path)::text, h.path), h.domain, COALESCE(sqlc.narg(new_data)::jsonb, h.data),
    COALESCE(sqlc.narg(new_post_at)::timestamptz, now()), COALESCE(sqlc.narg(new_post_at)::timestamptz, now()),
    h.retry_override, h.tags, h.ordering_key
FROM generate_subscripts(@source_ids::uuid[], 1) AS g (i)
JOIN hooks AS h ON h.id = (@source_ids::uuid[])[g.i]
WHERE h.project_id = @project_id;

-- name: SampleHooks :many
-- The first hooks (by post_at, then id) of those a dry run acted on: the
-- action ran in a savepoint, rolled back before this reads them as they
-- stand.
SELECT id, path, status, post_at, tags
FROM hooks
WHERE project_id = @project_id
  AND id = ANY(@ids::uuid[])
ORDER BY post_at, id
LIMIT @max_hooks::integer;

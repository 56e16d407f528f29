-- Listing hooks (GET /v1/hooks): one page through list_hooks (migration
-- 00039), which builds the page's query for its sort column and direction
-- and plans it with the actual values. The hooklist package fills the
-- parameters; NULL is no filter.

-- name: ListHooks :many
SELECT * FROM list_hooks(
    @project_id::uuid, sqlc.narg(status)::text, @by_post_at::boolean, @descending::boolean,
    sqlc.narg(key_at)::timestamptz, @key_id::uuid, sqlc.narg(end_at)::timestamptz,
    sqlc.narg(other_after)::timestamptz, sqlc.narg(other_before)::timestamptz,
    @row_limit::integer, @few::boolean, sqlc.narg(tags)::text[], sqlc.narg(ordering_key)::text);

-- name: CountHooks :one
-- Counts the hooks matching the filters, but stops at count_limit: an exact
-- count of millions of rows would cost far more than the page. Without time
-- filters on both columns, tags or an ordering key it reads only an index;
-- with tags, the tags' index (migration 00032) and the rows it finds; with an
-- ordering key, the key's range of hooks_ordering_key_list_idx (migration
-- 00039) and its rows' statuses. The status array (every
-- status when none is asked for) makes each status's range of the index
-- one scan bounded by the time filter.
SELECT count(*) FROM (
    SELECT 1 FROM hooks
    WHERE project_id = @project_id
      AND status = ANY(CASE WHEN sqlc.narg(status)::text IS NULL THEN '{pending,retry,completed,failed}'::text[]
                            ELSE ARRAY[sqlc.narg(status)::text] END)
      AND (sqlc.narg(created_after)::timestamptz IS NULL OR created_at > sqlc.narg(created_after))
      AND (sqlc.narg(created_before)::timestamptz IS NULL OR created_at < sqlc.narg(created_before))
      AND (sqlc.narg(post_after)::timestamptz IS NULL OR post_at > sqlc.narg(post_after))
      AND (sqlc.narg(post_before)::timestamptz IS NULL OR post_at < sqlc.narg(post_before))
      AND (sqlc.narg(tags)::text[] IS NULL
           OR (tags IS NOT NULL AND hook_tag_keys(project_id, tags) @> hook_tag_keys(@project_id, sqlc.narg(tags))))
      AND (sqlc.narg(ordering_key)::text IS NULL OR ordering_key = sqlc.narg(ordering_key)::text)
    LIMIT @count_limit
) AS matching;

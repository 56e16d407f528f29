-- Listing hooks (GET /v1/hooks). One query per sort column and direction,
-- each a merge of index range scans on (project_id, status, sort column,
-- id), one per status, in the sort direction, that stops after row_limit
-- rows; and, for filters on the other time column, a variant that selects
-- the matching hooks first. hooks has no list index without status
-- (migration 00025): every write of a hook would pay for its entries. So
-- a list of any status reads the four statuses' ranges side by side (the
-- four branches, the same but for the status: a new status needs a branch
-- here and in the status arrays below), and a list of one status reads
-- one (the others' `sqlc.narg(status)::text = '...'` folds to false). The
-- parameters are the same in every list query, so the hooklist package
-- fills one struct:
--   status                  NULL for any.
--   key_at, key_id          exclusive keyset position: the last row of the
--                           previous page, or on the first page the sort
--                           column's bound on the starting side (the caller
--                           folds it in); NULL key_at starts at the beginning.
--   end_at                  exclusive bound on the sort column where the scan
--                           stops; NULL for none.
--   other_after/_before     exclusive bounds on the other time column, a
--                           filter on the rows read; NULL for none.
--
-- The `@x IS NULL OR ...` tests rely on custom plans: planned with the
-- actual values, they fold away (absent filter) or become plain index
-- conditions. A generic plan (which a cached prepared statement may switch to
-- after five runs) can do neither and reads the project's whole index, so the
-- hooklist package runs these queries as unnamed statements (pgx
-- QueryExecModeCacheDescribe), which PostgreSQL plans at every execution.

-- name: ListHooksCreatedDesc :many
SELECT page.* FROM (
    (SELECT p.* FROM hooks AS p
     WHERE p.project_id = @project_id AND p.status = 'pending'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'pending')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (p.created_at, p.id) < (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR p.created_at > sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR p.post_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR p.post_at < sqlc.narg(other_before))
     ORDER BY p.created_at DESC, p.id DESC
     LIMIT @row_limit)
    UNION ALL
    (SELECT r.* FROM hooks AS r
     WHERE r.project_id = @project_id AND r.status = 'retry'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'retry')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (r.created_at, r.id) < (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR r.created_at > sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR r.post_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR r.post_at < sqlc.narg(other_before))
     ORDER BY r.created_at DESC, r.id DESC
     LIMIT @row_limit)
    UNION ALL
    (SELECT c.* FROM hooks AS c
     WHERE c.project_id = @project_id AND c.status = 'completed'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'completed')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (c.created_at, c.id) < (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR c.created_at > sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR c.post_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR c.post_at < sqlc.narg(other_before))
     ORDER BY c.created_at DESC, c.id DESC
     LIMIT @row_limit)
    UNION ALL
    (SELECT f.* FROM hooks AS f
     WHERE f.project_id = @project_id AND f.status = 'failed'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'failed')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (f.created_at, f.id) < (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR f.created_at > sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR f.post_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR f.post_at < sqlc.narg(other_before))
     ORDER BY f.created_at DESC, f.id DESC
     LIMIT @row_limit)
) AS page
ORDER BY page.created_at DESC, page.id DESC
LIMIT @row_limit;

-- name: ListHooksCreatedAsc :many
SELECT page.* FROM (
    (SELECT p.* FROM hooks AS p
     WHERE p.project_id = @project_id AND p.status = 'pending'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'pending')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (p.created_at, p.id) > (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR p.created_at < sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR p.post_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR p.post_at < sqlc.narg(other_before))
     ORDER BY p.created_at ASC, p.id ASC
     LIMIT @row_limit)
    UNION ALL
    (SELECT r.* FROM hooks AS r
     WHERE r.project_id = @project_id AND r.status = 'retry'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'retry')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (r.created_at, r.id) > (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR r.created_at < sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR r.post_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR r.post_at < sqlc.narg(other_before))
     ORDER BY r.created_at ASC, r.id ASC
     LIMIT @row_limit)
    UNION ALL
    (SELECT c.* FROM hooks AS c
     WHERE c.project_id = @project_id AND c.status = 'completed'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'completed')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (c.created_at, c.id) > (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR c.created_at < sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR c.post_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR c.post_at < sqlc.narg(other_before))
     ORDER BY c.created_at ASC, c.id ASC
     LIMIT @row_limit)
    UNION ALL
    (SELECT f.* FROM hooks AS f
     WHERE f.project_id = @project_id AND f.status = 'failed'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'failed')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (f.created_at, f.id) > (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR f.created_at < sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR f.post_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR f.post_at < sqlc.narg(other_before))
     ORDER BY f.created_at ASC, f.id ASC
     LIMIT @row_limit)
) AS page
ORDER BY page.created_at ASC, page.id ASC
LIMIT @row_limit;

-- name: ListHooksPostAtDesc :many
SELECT page.* FROM (
    (SELECT p.* FROM hooks AS p
     WHERE p.project_id = @project_id AND p.status = 'pending'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'pending')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (p.post_at, p.id) < (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR p.post_at > sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR p.created_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR p.created_at < sqlc.narg(other_before))
     ORDER BY p.post_at DESC, p.id DESC
     LIMIT @row_limit)
    UNION ALL
    (SELECT r.* FROM hooks AS r
     WHERE r.project_id = @project_id AND r.status = 'retry'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'retry')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (r.post_at, r.id) < (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR r.post_at > sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR r.created_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR r.created_at < sqlc.narg(other_before))
     ORDER BY r.post_at DESC, r.id DESC
     LIMIT @row_limit)
    UNION ALL
    (SELECT c.* FROM hooks AS c
     WHERE c.project_id = @project_id AND c.status = 'completed'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'completed')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (c.post_at, c.id) < (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR c.post_at > sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR c.created_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR c.created_at < sqlc.narg(other_before))
     ORDER BY c.post_at DESC, c.id DESC
     LIMIT @row_limit)
    UNION ALL
    (SELECT f.* FROM hooks AS f
     WHERE f.project_id = @project_id AND f.status = 'failed'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'failed')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (f.post_at, f.id) < (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR f.post_at > sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR f.created_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR f.created_at < sqlc.narg(other_before))
     ORDER BY f.post_at DESC, f.id DESC
     LIMIT @row_limit)
) AS page
ORDER BY page.post_at DESC, page.id DESC
LIMIT @row_limit;

-- name: ListHooksPostAtAsc :many
SELECT page.* FROM (
    (SELECT p.* FROM hooks AS p
     WHERE p.project_id = @project_id AND p.status = 'pending'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'pending')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (p.post_at, p.id) > (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR p.post_at < sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR p.created_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR p.created_at < sqlc.narg(other_before))
     ORDER BY p.post_at ASC, p.id ASC
     LIMIT @row_limit)
    UNION ALL
    (SELECT r.* FROM hooks AS r
     WHERE r.project_id = @project_id AND r.status = 'retry'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'retry')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (r.post_at, r.id) > (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR r.post_at < sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR r.created_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR r.created_at < sqlc.narg(other_before))
     ORDER BY r.post_at ASC, r.id ASC
     LIMIT @row_limit)
    UNION ALL
    (SELECT c.* FROM hooks AS c
     WHERE c.project_id = @project_id AND c.status = 'completed'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'completed')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (c.post_at, c.id) > (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR c.post_at < sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR c.created_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR c.created_at < sqlc.narg(other_before))
     ORDER BY c.post_at ASC, c.id ASC
     LIMIT @row_limit)
    UNION ALL
    (SELECT f.* FROM hooks AS f
     WHERE f.project_id = @project_id AND f.status = 'failed'
       AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'failed')
       AND (sqlc.narg(key_at)::timestamptz IS NULL OR (f.post_at, f.id) > (sqlc.narg(key_at), @key_id::uuid))
       AND (sqlc.narg(end_at)::timestamptz IS NULL OR f.post_at < sqlc.narg(end_at))
       AND (sqlc.narg(other_after)::timestamptz IS NULL OR f.created_at > sqlc.narg(other_after))
       AND (sqlc.narg(other_before)::timestamptz IS NULL OR f.created_at < sqlc.narg(other_before))
     ORDER BY f.post_at ASC, f.id ASC
     LIMIT @row_limit)
) AS page
ORDER BY page.post_at ASC, page.id ASC
LIMIT @row_limit;

-- name: ListFewHooksCreatedDesc :many
-- The same page for a filter on the other time column that few hooks
-- match. The plain query walks the sort column's index and filters, which
-- costs every row it skips: on a million hooks, 2 s to reach a window of a
-- day 50 days back. Here the subquery, which OFFSET 0 keeps from being
-- merged into the outer query, selects the matching hooks by the index that
-- suits the filters best, and only they are sorted.
SELECT matching.* FROM (
    SELECT * FROM hooks
    WHERE project_id = @project_id
      AND status = ANY(CASE WHEN sqlc.narg(status)::text IS NULL THEN '{pending,retry,completed,failed}'::text[]
                            ELSE ARRAY[sqlc.narg(status)::text] END)
      AND (sqlc.narg(key_at)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(key_at), @key_id::uuid))
      AND (sqlc.narg(end_at)::timestamptz IS NULL OR created_at > sqlc.narg(end_at))
      AND (sqlc.narg(other_after)::timestamptz IS NULL OR post_at > sqlc.narg(other_after))
      AND (sqlc.narg(other_before)::timestamptz IS NULL OR post_at < sqlc.narg(other_before))
    OFFSET 0
) AS matching
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: ListFewHooksCreatedAsc :many
SELECT matching.* FROM (
    SELECT * FROM hooks
    WHERE project_id = @project_id
      AND status = ANY(CASE WHEN sqlc.narg(status)::text IS NULL THEN '{pending,retry,completed,failed}'::text[]
                            ELSE ARRAY[sqlc.narg(status)::text] END)
      AND (sqlc.narg(key_at)::timestamptz IS NULL OR (created_at, id) > (sqlc.narg(key_at), @key_id::uuid))
      AND (sqlc.narg(end_at)::timestamptz IS NULL OR created_at < sqlc.narg(end_at))
      AND (sqlc.narg(other_after)::timestamptz IS NULL OR post_at > sqlc.narg(other_after))
      AND (sqlc.narg(other_before)::timestamptz IS NULL OR post_at < sqlc.narg(other_before))
    OFFSET 0
) AS matching
ORDER BY created_at ASC, id ASC
LIMIT @row_limit;

-- name: ListFewHooksPostAtDesc :many
SELECT matching.* FROM (
    SELECT * FROM hooks
    WHERE project_id = @project_id
      AND status = ANY(CASE WHEN sqlc.narg(status)::text IS NULL THEN '{pending,retry,completed,failed}'::text[]
                            ELSE ARRAY[sqlc.narg(status)::text] END)
      AND (sqlc.narg(key_at)::timestamptz IS NULL OR (post_at, id) < (sqlc.narg(key_at), @key_id::uuid))
      AND (sqlc.narg(end_at)::timestamptz IS NULL OR post_at > sqlc.narg(end_at))
      AND (sqlc.narg(other_after)::timestamptz IS NULL OR created_at > sqlc.narg(other_after))
      AND (sqlc.narg(other_before)::timestamptz IS NULL OR created_at < sqlc.narg(other_before))
    OFFSET 0
) AS matching
ORDER BY post_at DESC, id DESC
LIMIT @row_limit;

-- name: ListFewHooksPostAtAsc :many
SELECT matching.* FROM (
    SELECT * FROM hooks
    WHERE project_id = @project_id
      AND status = ANY(CASE WHEN sqlc.narg(status)::text IS NULL THEN '{pending,retry,completed,failed}'::text[]
                            ELSE ARRAY[sqlc.narg(status)::text] END)
      AND (sqlc.narg(key_at)::timestamptz IS NULL OR (post_at, id) > (sqlc.narg(key_at), @key_id::uuid))
      AND (sqlc.narg(end_at)::timestamptz IS NULL OR post_at < sqlc.narg(end_at))
      AND (sqlc.narg(other_after)::timestamptz IS NULL OR created_at > sqlc.narg(other_after))
      AND (sqlc.narg(other_before)::timestamptz IS NULL OR created_at < sqlc.narg(other_before))
    OFFSET 0
) AS matching
ORDER BY post_at ASC, id ASC
LIMIT @row_limit;

-- name: CountHooks :one
-- Counts the hooks matching the filters, but stops at count_limit: an exact
-- count of millions of rows would cost far more than the page. Without time
-- filters on both columns it reads only an index. The status array (every
-- status when none is asked for) makes each status's range of the index
-- one scan bounded by the time filter, as in the ListFew queries.
SELECT count(*) FROM (
    SELECT 1 FROM hooks
    WHERE project_id = @project_id
      AND status = ANY(CASE WHEN sqlc.narg(status)::text IS NULL THEN '{pending,retry,completed,failed}'::text[]
                            ELSE ARRAY[sqlc.narg(status)::text] END)
      AND (sqlc.narg(created_after)::timestamptz IS NULL OR created_at > sqlc.narg(created_after))
      AND (sqlc.narg(created_before)::timestamptz IS NULL OR created_at < sqlc.narg(created_before))
      AND (sqlc.narg(post_after)::timestamptz IS NULL OR post_at > sqlc.narg(post_after))
      AND (sqlc.narg(post_before)::timestamptz IS NULL OR post_at < sqlc.narg(post_before))
    LIMIT @count_limit
) AS matching;

-- +goose NO TRANSACTION

-- A hook's tags: up to 10 short strings (docs/choices.md, "Hook tags"),
-- NULL for none, that GET /v1/hooks filters on (every tag given must be
-- the hook's) and bulk actions select by.
--
-- The index: GIN over the hook's tags, each prefixed with its project
-- (hook_tag_keys), so that one lookup finds one project's hooks of a tag
-- and never another project's; partial on tags IS NOT NULL, so a hook
-- without tags costs nothing on any write. A tagged hook pays one entry a
-- tag on each of its writes that is not HOT (its claim and its finish).
-- A list filtered on tags counts first and, when few hooks match, selects
-- them through this index and sorts them, as for a filter on the other time
-- column (list_hooks' few); when many match it walks the sort index and
-- keeps the tagged ones, which then are dense. CONCURRENTLY, as migration
-- 00025, so that upgrading a busy deployment does not block writes.
--
-- list_hooks (migration 00029) gains with_tags; it is otherwise the same.

-- +goose Up
ALTER TABLE hooks ADD COLUMN IF NOT EXISTS tags text[];

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hook_tag_keys(project uuid, tags text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT array_agg(project::text || '/' || t) FROM unnest(tags) AS t $$;
-- +goose StatementEnd

CREATE INDEX CONCURRENTLY IF NOT EXISTS hooks_tags_idx ON hooks USING gin (hook_tag_keys(project_id, tags))
    WHERE tags IS NOT NULL;

DROP FUNCTION IF EXISTS list_hooks(uuid, text, boolean, boolean, timestamptz, uuid, timestamptz, timestamptz, timestamptz, integer, boolean);

-- +goose StatementBegin
CREATE FUNCTION list_hooks(project uuid, only_status text, by_post_at boolean, descending boolean,
        key_at timestamptz, key_id uuid, end_at timestamptz, other_after timestamptz,
        other_before timestamptz, row_limit integer, few boolean, with_tags text[])
    RETURNS SETOF hooks
    LANGUAGE plpgsql STABLE
AS $$
DECLARE
    sort_col  text := CASE WHEN by_post_at THEN 'post_at' ELSE 'created_at' END;
    other_col text := CASE WHEN by_post_at THEN 'created_at' ELSE 'post_at' END;
    dir       text := CASE WHEN descending THEN 'DESC' ELSE 'ASC' END;
    statuses  text[] := CASE WHEN only_status IS NULL THEN '{pending,retry,completed,failed}'::text[]
                             ELSE ARRAY[only_status] END;
    filters   text := '';
    matching  text;
BEGIN
    IF key_at IS NOT NULL THEN
        filters := filters || format(' AND (h.%I, h.id) %s ($2, $3)', sort_col, CASE WHEN descending THEN '<' ELSE '>' END);
    END IF;
    IF end_at IS NOT NULL THEN
        filters := filters || format(' AND h.%I %s $4', sort_col, CASE WHEN descending THEN '>' ELSE '<' END);
    END IF;
    IF other_after IS NOT NULL THEN
        filters := filters || format(' AND h.%I > $5', other_col);
    END IF;
    IF other_before IS NOT NULL THEN
        filters := filters || format(' AND h.%I < $6', other_col);
    END IF;
    IF few THEN
        -- The tags' index finds the project's hooks of the tags.
        IF with_tags IS NOT NULL THEN
            filters := filters || ' AND h.tags IS NOT NULL AND hook_tag_keys(h.project_id, h.tags) @> hook_tag_keys($1, $9)';
        END IF;
        matching := format('SELECT h.* FROM hooks AS h WHERE h.project_id = $1 AND h.status = ANY($8)%s OFFSET 0', filters);
    ELSE
        -- Many hooks have the tags: each row of the sort's index is kept
        -- or not by its own tags, a test that no index can answer, so the
        -- plan stays the walk of the sort's index (the tags' index, whose
        -- estimates are rough, would read every hook of the tags).
        IF with_tags IS NOT NULL THEN
            filters := filters || ' AND h.tags @> $9';
        END IF;
        SELECT string_agg(format('(SELECT h.* FROM hooks AS h WHERE h.project_id = $1 AND h.status = %L%s ORDER BY h.%I %s, h.id %s LIMIT $7)',
                                 s, filters, sort_col, dir, dir), ' UNION ALL ')
            INTO matching FROM unnest(statuses) AS s;
    END IF;
    RETURN QUERY EXECUTE format('SELECT page.* FROM (%s) AS page ORDER BY page.%I %s, page.id %s LIMIT $7', matching, sort_col, dir, dir)
        USING project, key_at, key_id, end_at, other_after, other_before, row_limit, statuses, with_tags;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS list_hooks(uuid, text, boolean, boolean, timestamptz, uuid, timestamptz, timestamptz, timestamptz, integer, boolean, text[]);

-- +goose StatementBegin
CREATE FUNCTION list_hooks(project uuid, only_status text, by_post_at boolean, descending boolean,
        key_at timestamptz, key_id uuid, end_at timestamptz, other_after timestamptz,
        other_before timestamptz, row_limit integer, few boolean)
    RETURNS SETOF hooks
    LANGUAGE plpgsql STABLE
AS $$
DECLARE
    sort_col  text := CASE WHEN by_post_at THEN 'post_at' ELSE 'created_at' END;
    other_col text := CASE WHEN by_post_at THEN 'created_at' ELSE 'post_at' END;
    dir       text := CASE WHEN descending THEN 'DESC' ELSE 'ASC' END;
    statuses  text[] := CASE WHEN only_status IS NULL THEN '{pending,retry,completed,failed}'::text[]
                             ELSE ARRAY[only_status] END;
    filters   text := '';
    matching  text;
BEGIN
    IF key_at IS NOT NULL THEN
        filters := filters || format(' AND (h.%I, h.id) %s ($2, $3)', sort_col, CASE WHEN descending THEN '<' ELSE '>' END);
    END IF;
    IF end_at IS NOT NULL THEN
        filters := filters || format(' AND h.%I %s $4', sort_col, CASE WHEN descending THEN '>' ELSE '<' END);
    END IF;
    IF other_after IS NOT NULL THEN
        filters := filters || format(' AND h.%I > $5', other_col);
    END IF;
    IF other_before IS NOT NULL THEN
        filters := filters || format(' AND h.%I < $6', other_col);
    END IF;
    IF few THEN
        matching := format('SELECT h.* FROM hooks AS h WHERE h.project_id = $1 AND h.status = ANY($8)%s OFFSET 0', filters);
    ELSE
        SELECT string_agg(format('(SELECT h.* FROM hooks AS h WHERE h.project_id = $1 AND h.status = %L%s ORDER BY h.%I %s, h.id %s LIMIT $7)',
                                 s, filters, sort_col, dir, dir), ' UNION ALL ')
            INTO matching FROM unnest(statuses) AS s;
    END IF;
    RETURN QUERY EXECUTE format('SELECT page.* FROM (%s) AS page ORDER BY page.%I %s, page.id %s LIMIT $7', matching, sort_col, dir, dir)
        USING project, key_at, key_id, end_at, other_after, other_before, row_limit, statuses;
END
$$;
-- +goose StatementEnd

DROP INDEX CONCURRENTLY IF EXISTS hooks_tags_idx;
DROP FUNCTION IF EXISTS hook_tag_keys(uuid, text[]);
ALTER TABLE hooks DROP COLUMN IF EXISTS tags;

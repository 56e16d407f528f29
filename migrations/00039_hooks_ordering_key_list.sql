-- +goose NO TRANSACTION

-- Listing one ordering key's hooks (GET /v1/hooks?orderingKey=, the
-- dashboard's hooks page; docs/choices.md, "Ordering keys").
--
-- hooks_ordering_key_list_idx is the key's hooks in the list's default
-- order, (created_at, id) after the project and the key, so that a page of
-- a key reads one range of it in the sort direction and stops after its
-- rows, whatever the project and the key hold: the per-status list indexes
-- would walk every hook of the project to find a key's, and
-- hooks_ordering_idx (migration 00036) holds only unfinished hooks. No
-- status column: a list of any status, the common one, is then one range
-- rather than four to merge; a status filter is checked on the rows of
-- that range. Partial on ordering_key IS NOT NULL, so a hook without an
-- ordering key costs nothing on any write. CONCURRENTLY, as migration
-- 00025, so that upgrading a busy deployment does not block writes; goose
-- runs this file outside a transaction for that.
--
-- list_hooks (migration 00032) gains with_ordering_key, as a new function
-- of 13 arguments beside the one of 12, which is otherwise the same and
-- stays for the gateways of the previous release that still call it during
-- a rolling upgrade (docs/operations.md, "Rolling upgrades").

-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS hooks_ordering_key_list_idx
    ON hooks (project_id, ordering_key, created_at, id)
    WHERE ordering_key IS NOT NULL;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION list_hooks(project uuid, only_status text, by_post_at boolean, descending boolean,
        key_at timestamptz, key_id uuid, end_at timestamptz, other_after timestamptz,
        other_before timestamptz, row_limit integer, few boolean, with_tags text[], with_ordering_key text)
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
    -- The equality implies ordering_key IS NOT NULL, which lets the plan
    -- use the partial indexes of ordering keys.
    IF with_ordering_key IS NOT NULL THEN
        filters := filters || ' AND h.ordering_key = $10';
    END IF;
    IF few THEN
        -- The tags' index finds the project's hooks of the tags.
        IF with_tags IS NOT NULL THEN
            filters := filters || ' AND h.tags IS NOT NULL AND hook_tag_keys(h.project_id, h.tags) @> hook_tag_keys($1, $9)';
        END IF;
        matching := format('SELECT h.* FROM hooks AS h WHERE h.project_id = $1 AND h.status = ANY($8)%s OFFSET 0', filters);
    ELSIF with_ordering_key IS NOT NULL THEN
        -- One key's hooks: by createdAt, one range of
        -- hooks_ordering_key_list_idx in the sort direction, the keyset
        -- and the bounds on created_at its ends, the status and the
        -- rest checked on its rows; by postAt, the key's hooks from the
        -- same index, sorted.
        IF with_tags IS NOT NULL THEN
            filters := filters || ' AND h.tags @> $9';
        END IF;
        matching := format('SELECT h.* FROM hooks AS h WHERE h.project_id = $1 AND h.status = ANY($8)%s ORDER BY h.%I %s, h.id %s LIMIT $7',
                           filters, sort_col, dir, dir);
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
        USING project, key_at, key_id, end_at, other_after, other_before, row_limit, statuses, with_tags, with_ordering_key;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS list_hooks(uuid, text, boolean, boolean, timestamptz, uuid, timestamptz, timestamptz, timestamptz, integer, boolean, text[], text);
DROP INDEX CONCURRENTLY IF EXISTS hooks_ordering_key_list_idx;

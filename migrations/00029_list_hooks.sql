-- The one statement of a page of hooks (GET /v1/hooks, the dashboard's
-- hooks page): list_hooks builds the page's query for its sort column and
-- direction and runs it with EXECUTE, which plans it afresh with the actual
-- values, so absent filters are left out of the plan.
--
-- hooks has no list index without status (migration 00025): every write of
-- a hook would pay for its entries. So a page of any status merges the four
-- statuses' ranges of the index on (project_id, status, sort column, id),
-- each read in the sort direction and stopping after row_limit rows: a
-- page costs about its own rows, whatever the project holds (a plan over
-- `status = ANY(...)` would read and sort all of the project's hooks). A
-- page of one status reads one range. few is for a filter on the other
-- time column that matches few hooks: those are selected first (OFFSET 0
-- keeps PostgreSQL from pushing the sort into the scan), then sorted.
--
-- The keyset: key_at and key_id, exclusive, are the last row of the
-- previous page (on the first page, the sort column's bound on the starting
-- side); NULL key_at starts at the beginning. end_at is an exclusive bound
-- on the sort column where the scan stops; other_after and other_before
-- are exclusive bounds on the other time column. NULL is no bound.

-- +goose Up
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

-- +goose Down
DROP FUNCTION list_hooks(uuid, text, boolean, boolean, timestamptz, uuid, timestamptz, timestamptz, timestamptz, integer, boolean);

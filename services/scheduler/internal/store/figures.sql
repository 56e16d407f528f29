-- The dashboard's figures (docs/dashboard.md, "Figures"): per project and
-- minute, counts of attempts by outcome and the lateness histogram of
-- first attempts. The scheduler is their one writer.

-- name: AddDeliveryMinutes :exec
-- Adds a batch's figures, one row per (project_ids[i], step_seconds[i],
-- minutes[i]) (minutes[i] the first minute of a step of that length), to
-- what is counted: counts add up, and the lateness histograms add element
-- by element. buckets is every row's histogram end to end, width buckets
-- each (arrays of arrays cannot go through sqlc row by row). A stored
-- histogram shorter than the one added (the column's default '{}') is
-- padded with zeros. The caller sorts the rows by key so that two
-- batches lock shared rows in the same order. Every row of the batch goes
-- to the shard the caller chose for this transaction.
INSERT INTO delivery_minutes AS d (project_id, step_seconds, minute, shard, succeeded, failed, async, lateness_buckets)
SELECT u.project_id, u.step_seconds, u.minute, sqlc.arg(shard)::smallint, u.succeeded, u.failed, u.async,
    (sqlc.arg(buckets)::bigint[])[(u.ord - 1) * sqlc.arg(width)::int + 1 : u.ord * sqlc.arg(width)::int]
FROM (
    SELECT unnest(sqlc.arg(project_ids)::uuid[]) AS project_id,
        unnest(sqlc.arg(step_seconds)::integer[]) AS step_seconds,
        unnest(sqlc.arg(minutes)::timestamptz[]) AS minute,
        unnest(sqlc.arg(succeeded)::integer[]) AS succeeded,
        unnest(sqlc.arg(failed)::integer[]) AS failed,
        unnest(sqlc.arg(async)::integer[]) AS async,
        generate_series(1, cardinality(sqlc.arg(project_ids)::uuid[])) AS ord
) AS u
ON CONFLICT (project_id, step_seconds, minute, shard) DO UPDATE SET
    succeeded = d.succeeded + EXCLUDED.succeeded,
    failed = d.failed + EXCLUDED.failed,
    async = d.async + EXCLUDED.async,
    lateness_buckets = COALESCE((
        SELECT array_agg(COALESCE(d.lateness_buckets[i], 0) + COALESCE(EXCLUDED.lateness_buckets[i], 0) ORDER BY i)
        FROM generate_series(1, GREATEST(cardinality(d.lateness_buckets), cardinality(EXCLUDED.lateness_buckets))) AS i
    ), '{}');

-- name: GenericPlansUntilCommit :exec
-- Makes the rest of the transaction run its statements on generic plans
-- (SET LOCAL plan_cache_mode): AddDeliveryMinutes' arrays hold a few rows,
-- which a custom plan counts exactly and the generic plan guesses at 100,
-- so PostgreSQL planned it anew at every result batch, a plan costing more
-- than running it (docs/benchmarks.md, "Writes per hook").
SELECT set_config('plan_cache_mode', 'force_generic_plan', true);

-- name: DeleteDeliveryMinutesBefore :execrows
-- Deletes up to max_rows rows of minutes before before: the overview
-- reads 7 days at most. Rows another transaction is adding to are left for
-- the next round.
DELETE FROM delivery_minutes AS d
WHERE (d.project_id, d.minute, d.shard) IN (
    SELECT o.project_id, o.minute, o.shard FROM delivery_minutes AS o
    WHERE o.minute < sqlc.arg(before)
    LIMIT sqlc.arg(max_rows)
    FOR UPDATE SKIP LOCKED);

-- The dashboard's figures per step (docs/dashboard.md, "Figures"): the
-- scheduler counts every delivery once per step length of
-- deliverystats.Steps (1 min, 5 min, 1 h), in delivery_minutes rows told
-- apart by step_seconds, so that the overview reads one row per shard and
-- step of its range. Summing minutes was too slow: 7 days are 80,640
-- minute rows (8 shards), too many to read for one page
-- (docs/benchmarks.md, "The dashboard"); per step they are 1,344 (7 d per
-- hour) and 2,304 (24 h per 5 minutes). `minute` is the
-- step's first minute. The rows already counted are summed into the longer
-- steps here.

-- +goose Up
ALTER TABLE delivery_minutes
    ADD COLUMN step_seconds integer NOT NULL DEFAULT 60 CHECK (step_seconds IN (60, 300, 3600)),
    DROP CONSTRAINT delivery_minutes_pkey,
    ADD PRIMARY KEY (project_id, step_seconds, minute, shard);

INSERT INTO delivery_minutes (project_id, step_seconds, minute, shard, succeeded, failed, async, lateness_buckets)
SELECT c.project_id, c.step_seconds, c.minute, c.shard, c.succeeded, c.failed, c.async,
       COALESCE(b.buckets, '{}')
FROM (
    SELECT d.project_id, s.step_seconds,
           date_bin(make_interval(secs => s.step_seconds), d.minute, timestamptz '2000-01-01 00:00:00+00') AS minute,
           d.shard, sum(d.succeeded)::integer AS succeeded, sum(d.failed)::integer AS failed,
           sum(d.async)::integer AS async
    FROM delivery_minutes AS d, (VALUES (300), (3600)) AS s (step_seconds)
    WHERE d.step_seconds = 60
    GROUP BY 1, 2, 3, 4
) AS c
LEFT JOIN LATERAL (
    SELECT array_agg(x.total ORDER BY x.i) AS buckets
    FROM (
        SELECT u.i, sum(u.n)::bigint AS total
        FROM delivery_minutes AS d, unnest(d.lateness_buckets) WITH ORDINALITY AS u (n, i)
        WHERE d.project_id = c.project_id AND d.shard = c.shard AND d.step_seconds = 60
          AND d.minute >= c.minute AND d.minute < c.minute + make_interval(secs => c.step_seconds)
        GROUP BY u.i
    ) AS x
) AS b ON true;

-- +goose Down
DELETE FROM delivery_minutes WHERE step_seconds <> 60;
ALTER TABLE delivery_minutes
    DROP CONSTRAINT delivery_minutes_pkey,
    DROP COLUMN step_seconds,
    ADD PRIMARY KEY (project_id, minute, shard);

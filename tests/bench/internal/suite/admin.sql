-- Statements the benchmark runs itself, outside the services' stores: each
-- follows a "-- name:" line. {{db}} is replaced by a quoted database name
-- (an identifier cannot be a parameter).

-- name: create-database
CREATE DATABASE {{db}};

-- name: drop-database
DROP DATABASE IF EXISTS {{db}} WITH (FORCE);

-- name: skip-triggers
-- The backlog's COPY skips the row triggers (the projects foreign key check
-- and the due notification, which a hook due next year never sends); only
-- a superuser may, and the load goes on with them otherwise.
SET session_replication_role = replica;

-- name: analyze-hooks
-- After the backlog's COPY, so the planner knows the table's new size.
ANALYZE hooks;

-- name: checkpoint
-- After a backlog load, for both systems: the load leaves gigabytes of WAL
-- and dirty pages, and the checkpoint it triggers otherwise writes them
-- back during the first tens of seconds of the measurement (PostgreSQL's
-- log showed one spread over 44 s of a 60 s run). A table that has been
-- large for a while has none of that.
CHECKPOINT;

-- name: database-stats
-- Transactions and row operations of the benchmark's database so far, to
-- count database round trips per delivered hook.
SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_fetched
FROM pg_stat_database
WHERE datname = current_database();

-- name: other-backends
-- Connections to the benchmark's database besides this one: once the
-- services' are gone, their counters have been published (a backend
-- publishes them before it leaves pg_stat_activity).
SELECT count(*)
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid();

-- name: clone-sequences
-- The sequences scenarios' bulk load: $2 copies of one sequence the API
-- created ($1), each with its own name and a UUIDv7 id of now whose last
-- bytes are the copy's number (as the hooks backlog's ids), and everything
-- else as the API wrote it: schedule, steps, bounds, policies, status and
-- the next_run_at the gateway planned. created_at and updated_at are now(),
-- as for a create.
INSERT INTO sequences (id, project_id, name, schedule, steps, start_at, end_at, catch_up, overlap,
                       status, next_run_at, last_run_at, created_at, updated_at)
SELECT (lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0')
        || '7000' || '8' || lpad(to_hex(n), 15, '0'))::uuid,
       t.project_id, t.name || '-' || n, t.schedule, t.steps, t.start_at, t.end_at, t.catch_up,
       t.overlap, t.status, t.next_run_at, t.last_run_at, now(), now()
FROM sequences AS t, generate_series(1, $2::integer) AS n
WHERE t.id = $1;

-- name: analyze-sequences
-- After a bulk load of sequences, so the planner knows the table's size.
ANALYZE sequences;

-- name: slot-runs
-- How many scheduled runs of the slot $1 exist: the sequences scenario
-- polls it.
SELECT count(*)::int
FROM sequence_runs
WHERE slot = $1 AND trigger = 'schedule';

-- name: slot-run-hooks
-- The root step hooks of the runs of the slot $1, with when each run
-- started (the transaction that created the hook).
SELECT st.hook_id, r.started_at
FROM sequence_runs AS r
JOIN sequence_run_steps AS st ON st.run_id = r.id
WHERE r.slot = $1 AND r.trigger = 'schedule' AND st.hook_id IS NOT NULL;

-- name: listener-presence
-- Whether a project is listening (a row listener_live, as the scheduler's
-- claim decides: docs/listener.md, "Routing") and
-- how many sockets its connected rows count: the listen scenario waits on
-- it before it schedules hooks for the listener.
SELECT coalesce(bool_or(listener_live(connected, seen_at)), false),
       coalesce(sum(sockets) FILTER (WHERE connected), 0)::int
FROM listener_presence
WHERE project_id = $1;

-- name: seed-dashboard-hooks
-- The dashboard scenario's project ($1, domain $2): $3 hooks created
-- evenly over the last 7 days, newest last, with ids that ascend with
-- created_at as the API's UUIDv7 do (the creation instant in ms, the row's
-- number in the last bytes). Mixed as a busy project's: 80 % completed
-- (most in one attempt), 7 % failed (3 attempts), 9 % pending and 4 %
-- retry, whose run_at is at least an hour ahead so that no scheduler
-- claims them during the run. Twelve paths, a payload of about 150 bytes.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, status, attempts, lease_seq,
                   post_duration_seconds, failure_error, try_at, run_at, created_at, updated_at)
SELECT (lpad(to_hex((extract(epoch FROM h.created_at) * 1000)::bigint), 12, '0')
        || '7000' || '8' || lpad(to_hex(h.n), 15, '0'))::uuid,
       $1, h.path, $2,
       jsonb_build_object('event', 'evt_' || h.n, 'customer', 'cus_' || (h.n % 50000),
                          'amount', h.n % 100000, 'currency', 'eur', 'path', h.path,
                          'note', 'seeded by the dashboard benchmark'),
       CASE WHEN h.status = 'pending' THEN h.ahead ELSE least(h.created_at + h.delay, now()) END,
       h.status, h.attempts, h.attempts,
       CASE WHEN h.attempts > 0 THEN 0.02 + (h.n % 300) / 1000.0 ELSE 0 END,
       CASE WHEN h.status = 'failed' THEN 'POST https://' || $2 || h.path || ': 500 Internal Server Error' END,
       CASE WHEN h.status = 'retry' THEN h.ahead END,
       CASE WHEN h.status IN ('pending', 'retry') THEN h.ahead END,
       h.created_at, h.created_at
FROM (
    SELECT s.*,
           CASE WHEN s.status = 'completed' THEN (ARRAY[1, 1, 1, 1, 1, 1, 1, 1, 2, 3])[1 + s.n % 10]
                WHEN s.status = 'failed' THEN 3
                WHEN s.status = 'retry' THEN 1 + s.n % 2
                ELSE 0 END AS attempts
    FROM (
        SELECT n,
               now() - interval '7 days' * (1 - n::float8 / $3) AS created_at,
               make_interval(secs => (n * 7) % 600) AS delay,
               now() + interval '1 hour' + make_interval(secs => n % 604800) AS ahead,
               (ARRAY['/webhooks/orders/created', '/webhooks/orders/paid', '/webhooks/invoices/finalized',
                      '/webhooks/subscriptions/renewed', '/webhooks/customers/updated',
                      '/webhooks/shipments/dispatched', '/webhooks/refunds/issued', '/jobs/reminders/email',
                      '/jobs/reports/daily', '/jobs/trials/ending', '/jobs/cleanup/sessions',
                      '/integrations/crm/sync'])[1 + n % 12] AS path,
               CASE WHEN (n * 37) % 100 < 80 THEN 'completed'
                    WHEN (n * 37) % 100 < 87 THEN 'failed'
                    WHEN (n * 37) % 100 < 96 THEN 'pending'
                    ELSE 'retry' END AS status
        FROM generate_series(1, $3::integer) AS n
    ) AS s
) AS h;

-- name: seed-dashboard-attempts
-- Every attempt of the project's ($1) hooks: one row per attempt counted,
-- 30 s apart from postAt; the last attempt of a completed hook succeeded,
-- every other failed with a 500.
INSERT INTO hook_attempts (hook_id, attempt, lease_seq, started_at, duration_seconds, outcome,
                           status_code, error, response_excerpt, created_at)
SELECT h.id, a, a, h.post_at + (a - 1) * interval '30 seconds', h.post_duration_seconds,
       CASE WHEN h.status = 'completed' AND a = h.attempts THEN 'success' ELSE 'failure' END,
       CASE WHEN h.status = 'completed' AND a = h.attempts THEN 200 ELSE 500 END,
       CASE WHEN h.status = 'completed' AND a = h.attempts THEN NULL ELSE 'unexpected status 500' END,
       CASE WHEN h.status = 'completed' AND a = h.attempts THEN '{"ok":true}' ELSE '{"error":"internal"}' END,
       h.post_at + (a - 1) * interval '30 seconds'
FROM hooks AS h, generate_series(1, h.attempts) AS a
WHERE h.project_id = $1;

-- name: seed-dashboard-minutes
-- The project's ($1) delivery figures for the last 7 days, kept as the
-- scheduler keeps them (migration 00019): every minute with all 8 shards
-- (the most the scheduler writes), about 100 deliveries a minute in all,
-- the first attempts' lateness mostly 2 to 20 ms; then each shard's
-- minutes summed into its 5-minute and hour rows.
WITH minutes AS (
    INSERT INTO delivery_minutes (project_id, step_seconds, minute, shard, succeeded, failed, async, lateness_buckets)
    SELECT $1, 60, m.minute, s.shard, 11 + k % 3, (k % 5 = 0)::int, (k % 17 = 0)::int,
           ARRAY[0, k % 2, 3 + k % 3, 5, 2 + k % 2, 1, k % 2, (k % 7 = 0)::int, 0, 0, 0, 0, 0, 0, 0, (k % 97 = 0)::int]::bigint[]
    FROM generate_series(date_trunc('minute', now()) - interval '7 days', date_trunc('minute', now()), interval '1 minute') AS m (minute),
         generate_series(0, 7) AS s (shard),
         LATERAL (SELECT (extract(epoch FROM m.minute)::bigint / 60) + s.shard AS k) AS kk
    RETURNING project_id, minute, shard, succeeded, failed, async, lateness_buckets
)
INSERT INTO delivery_minutes (project_id, step_seconds, minute, shard, succeeded, failed, async, lateness_buckets)
SELECT m.project_id, st.step_seconds,
       date_bin(make_interval(secs => st.step_seconds), m.minute, timestamptz '2000-01-01 00:00:00+00'),
       m.shard, sum(m.succeeded), sum(m.failed), sum(m.async),
       ARRAY[sum(m.lateness_buckets[1]), sum(m.lateness_buckets[2]), sum(m.lateness_buckets[3]), sum(m.lateness_buckets[4]),
             sum(m.lateness_buckets[5]), sum(m.lateness_buckets[6]), sum(m.lateness_buckets[7]), sum(m.lateness_buckets[8]),
             sum(m.lateness_buckets[9]), sum(m.lateness_buckets[10]), sum(m.lateness_buckets[11]), sum(m.lateness_buckets[12]),
             sum(m.lateness_buckets[13]), sum(m.lateness_buckets[14]), sum(m.lateness_buckets[15]), sum(m.lateness_buckets[16])]::bigint[]
FROM minutes AS m, (VALUES (300), (3600)) AS st (step_seconds)
GROUP BY 1, 2, 3, 4;

-- name: vacuum-dashboard
-- After the seeding: a table that has been filled over 7 days has been
-- vacuumed and analyzed by autovacuum (visibility map set, so the list's
-- count reads only the index); a fresh load has not, and autovacuum would
-- otherwise start during the measurement.
VACUUM (ANALYZE) hooks, hook_attempts, delivery_minutes;

-- name: count-dashboard-figures
-- The project's ($1) rows of delivery_minutes, every step length.
SELECT count(*)::int FROM delivery_minutes WHERE project_id = $1;

-- name: dashboard-hook-with-attempts
-- A hook of the project ($1) with 3 attempts, the dashboard's hook page.
SELECT id FROM hooks WHERE project_id = $1 AND attempts = 3 LIMIT 1;

-- name: seed-expired
-- The retention scenarios' expired hooks of project $1 (domain $2), rows
-- $3 to $4 of $5: finished 60 to 90 days ago (older than the default
-- retentionDays, 30, and within the plan's default bound, 90), every
-- tenth failed and the rest completed, each with the one attempt that
-- finished it. Ids ascend with created_at as the API's UUIDv7 do (the
-- creation instant in ms, the row's number in the last bytes), and
-- updated_at (the cleaner's order) with the row number. One statement
-- writes both tables: the hooks it inserts feed the attempts.
WITH h AS (
    INSERT INTO hooks (id, project_id, path, domain, data, post_at, status, attempts, lease_seq,
                       post_duration_seconds, failure_error, created_at, updated_at)
    SELECT (lpad(to_hex((extract(epoch FROM s.post_at - interval '1 minute') * 1000)::bigint), 12, '0')
            || '7000' || '8' || lpad(to_hex(s.n), 15, '0'))::uuid,
           $1, '/expired', $2, jsonb_build_object('event', 'evt_' || s.n, 'note', 'expired, seeded by the retention benchmark'),
           s.post_at, s.status, 1, 1, 0.02,
           CASE WHEN s.status = 'failed' THEN 'POST https://' || $2 || '/expired: 500 Internal Server Error' END,
           s.post_at - interval '1 minute', s.post_at + interval '1 second'
    FROM (
        SELECT n,
               now() - interval '90 days' + interval '30 days' * (n::float8 / $5) AS post_at,
               CASE WHEN n % 10 = 0 THEN 'failed' ELSE 'completed' END AS status
        FROM generate_series($3::integer, $4::integer) AS n
    ) AS s
    RETURNING id, post_at, status
)
INSERT INTO hook_attempts (hook_id, attempt, lease_seq, started_at, duration_seconds, outcome,
                           status_code, error, response_excerpt, created_at)
SELECT h.id, 1, 1, h.post_at, 0.02,
       CASE WHEN h.status = 'completed' THEN 'success' ELSE 'failure' END,
       CASE WHEN h.status = 'completed' THEN 200 ELSE 500 END,
       CASE WHEN h.status = 'completed' THEN NULL ELSE 'unexpected status 500' END,
       CASE WHEN h.status = 'completed' THEN '{"ok":true}' ELSE '{"error":"internal"}' END,
       h.post_at + interval '1 second'
FROM h;

-- name: vacuum-expired
-- After the expired hooks' load: a table whose rows were written over
-- months has been vacuumed and analyzed by autovacuum; a fresh load has
-- not, and autovacuum would otherwise start during the measurement.
VACUUM (ANALYZE) hooks, hook_attempts;

-- name: count-expired
-- The retention scenarios' expired hooks of project $1 still in the table,
-- and the attempts older than 30 days (the expired hooks' alone: the run's
-- own are from now).
SELECT (SELECT count(*) FROM hooks WHERE project_id = $1 AND path = '/expired'),
       (SELECT count(*) FROM hook_attempts WHERE created_at < now() - interval '30 days');

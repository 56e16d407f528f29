-- Fixtures of the claim's benchmarks.

-- name: InsertDueHooksForTest :exec
-- n new hooks of a project, to its domain, due since a second (a burst as
-- the claim finds it), numbered from first. With keys > 0 they share that
-- many ordering keys, hook i under key i % keys, each hook's postAt i
-- microseconds later.
INSERT INTO hooks (id, project_id, path, domain, data, post_at, run_at, ordering_key)
SELECT gen_random_uuid(), p.id, '/bench', sqlc.arg(domain), '{"n":1}'::jsonb,
    now() - interval '1 second' + make_interval(secs => g * 1e-6), now() - interval '1 second',
    CASE WHEN sqlc.arg(keys)::integer > 0 THEN 'key-' || (g % sqlc.arg(keys)::integer) END
FROM projects AS p, generate_series(sqlc.arg(first)::integer, sqlc.arg(first)::integer + sqlc.arg(n)::integer - 1) AS g
WHERE p.id = sqlc.arg(project_id);

-- name: PausedDomainForTest :exec
-- A domain paused for an hour, as an opened breaker leaves it.
INSERT INTO endpoint_breakers (project_id, domain, consecutive_failures, failing_since, last_error,
    paused_at, paused_until, pause_cause, pause_reason, cooldown_secs, held_until)
VALUES (sqlc.arg(project_id), sqlc.arg(domain), 10, now(), 'timeout', now(), now() + interval '1 hour',
    'failures', 'bench', 3600, now() + interval '1 hour');

-- name: DeferPausedForTest :exec
-- What the claim does to a paused domain's due hooks.
UPDATE hooks AS h SET run_at = b.paused_until
FROM endpoint_breakers AS b
WHERE b.project_id = h.project_id AND b.domain = h.domain
  AND h.project_id = sqlc.arg(project_id) AND h.domain = sqlc.arg(domain);

-- name: ShiftHooksForTest :exec
-- Moves every unfinished hook's due time by seconds (a burst still ahead).
UPDATE hooks
SET run_at = run_at + make_interval(secs => sqlc.arg(seconds)::float8),
    post_at = post_at + make_interval(secs => sqlc.arg(seconds)::float8)
WHERE run_at IS NOT NULL;

-- name: AnalyzeHooksForTest :exec
-- Takes the hooks table's statistics now, as autovacuum would.
ANALYZE hooks;

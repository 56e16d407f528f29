-- Test fixtures of the result applier's tests and benchmarks.

-- name: SetAttemptsForTest :execrows
-- Gives a hook a history of n attempts and a retry budget counted from them
-- (what bulk retries leave behind), so a test can report an attempt number
-- the hooks_retry_budget_base_check refuses.
UPDATE hooks SET attempts = sqlc.arg(n), retry_budget_base = sqlc.arg(n) WHERE id = sqlc.arg(id);

-- name: InsertLeasedHooksForTest :many
-- n hooks of a project claimed under lease 1 and being delivered, as a
-- claim leaves them (benchmarks of the applier only).
INSERT INTO hooks (id, project_id, path, domain, data, post_at, run_at, lease_seq, lease_expires_at)
SELECT gen_random_uuid(), p.id, '/bench', p.domain, '{"n":1}'::jsonb, now(), now() + interval '1 hour', 1,
    now() + interval '1 hour'
FROM projects AS p, generate_series(1, sqlc.arg(n)::integer)
WHERE p.id = sqlc.arg(project_id)
RETURNING id, lease_seq;

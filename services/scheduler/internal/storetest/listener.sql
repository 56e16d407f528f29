-- Fixtures of the listener's routing (the gateway writes presence in
-- production).

-- name: UpsertPresenceForTest :exec
-- A gateway's presence row of a project: connected or not, seen
-- seen_ago_seconds before the database's now, its resume window ending
-- resume_in_seconds from now (negative: ended).
INSERT INTO listener_presence (project_id, gateway_id, connected, sockets, seen_at, resume_until)
VALUES (sqlc.arg(project_id), sqlc.arg(gateway_id), sqlc.arg(connected),
    CASE WHEN sqlc.arg(connected)::boolean THEN 1 ELSE 0 END,
    now() - make_interval(secs => sqlc.arg(seen_ago_seconds)::float8),
    now() + make_interval(secs => sqlc.arg(resume_in_seconds)::float8))
ON CONFLICT (project_id, gateway_id) DO UPDATE
SET connected = EXCLUDED.connected, sockets = EXCLUDED.sockets,
    seen_at = EXCLUDED.seen_at, resume_until = EXCLUDED.resume_until;

-- name: HoldHooksForTest :exec
-- What the claim does to a holding project's due hooks, for a benchmark's
-- or cost test's set-up: held until an hour from now.
UPDATE hooks
SET held_due_at = run_at, run_at = now() + interval '1 hour'
WHERE project_id = sqlc.arg(project_id) AND run_at IS NOT NULL;

-- name: FinishHookForTest :exec
-- A held hook finished by a late result of its previous lease (a hold
-- keeps lease_seq, so that result still applies).
UPDATE hooks SET status = 'completed', run_at = NULL, lease_expires_at = NULL
WHERE id = sqlc.arg(id);

-- name: NotifyListenerForTest :exec
-- What the gateway sends when a project's first socket opens on it.
SELECT pg_notify('sundial_listener', sqlc.arg(project_id)::uuid::text);


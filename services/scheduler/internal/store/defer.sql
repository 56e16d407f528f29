-- Deferred deliveries (package result, deferral.go): a dispatcher could not
-- start the delivery (its host or project at its concurrency limit, its
-- delivery pool busy), so nothing was sent.

-- name: DeferHooks :many
-- The hooks, locked by the caller's transaction under the lease of a
-- deferred result, go back to waiting as before their claim: due again
-- delays[i] seconds from now by the database clock, lease released, no
-- attempt counted, and the re-drive count reset (a deferral proves that a
-- dispatcher took the hook, so it was no loss). A hook that has been
-- attempted goes back to retry, its tryAt the new due time; a new one stays
-- pending. updated_at, the user-visible update time, is left alone.
UPDATE hooks AS h
SET status           = CASE WHEN h.attempts > 0 THEN 'retry' ELSE 'pending' END,
    run_at           = now() + make_interval(secs => u.delay),
    try_at           = CASE WHEN h.attempts > 0 THEN now() + make_interval(secs => u.delay)
                            ELSE h.try_at END,
    lease_expires_at = NULL,
    redrives         = 0
FROM (
    SELECT unnest(sqlc.arg(ids)::uuid[]) AS id,
        unnest(sqlc.arg(delays)::float8[]) AS delay
) AS u
WHERE h.id = u.id
RETURNING h.id, h.status, h.run_at::timestamptz AS run_at;

-- Local times that follow the tz database (migration 00034, docs/product.md
-- "Local times and the tz database").

-- name: LockStaleLocalTimeHooks :many
-- Pending local-time hooks resolved with a tz database release older than
-- tz_version, never attempted and not claimed: those a scheduler of a newer
-- release resolves again. A hook already due is among them, since the new
-- rules may put its wall time still ahead. hooks_local_time_idx finds them;
-- SKIP LOCKED lets several schedulers share the work, and a claim that
-- locked a row first keeps it (it is then attempted, and left alone).
-- Releases sort by name: a year, then a letter.
SELECT h.id, h.post_at, h.post_at_local::timestamp AS post_at_local, h.timezone::text AS timezone,
    h.tz_version::text AS tz_version
FROM hooks AS h
WHERE h.timezone IS NOT NULL
  AND h.status = 'pending'
  AND h.tz_version < sqlc.arg(tz_version)::text
  AND h.attempts = 0
  AND h.lease_expires_at IS NULL
LIMIT sqlc.arg(max_hooks)::integer
FOR UPDATE SKIP LOCKED;

-- name: MoveLocalTimeHooks :exec
-- Sets each hook's post_at where its wall time falls under release
-- tz_version, and stamps the release. run_at follows post_at when it was
-- waiting for it; a hook held later (a paused endpoint, a listener's
-- resume window) keeps its run_at unless the new post_at is later still,
-- so that it is never sent before its wall time. updated_at shows the
-- change to the hook's schedule.
UPDATE hooks AS h
SET post_at    = u.post_at,
    run_at     = CASE WHEN h.run_at = h.post_at THEN u.post_at ELSE GREATEST(h.run_at, u.post_at) END,
    tz_version = sqlc.arg(tz_version)::text,
    updated_at = CASE WHEN u.post_at <> h.post_at THEN now() ELSE h.updated_at END
FROM (
    SELECT unnest(sqlc.arg(ids)::uuid[]) AS id, unnest(sqlc.arg(post_ats)::timestamptz[]) AS post_at
) AS u
WHERE h.id = u.id;

-- name: LockStaleSequences :many
-- Active calendar sequences whose next slot was planned with a tz
-- database release older than tz_version and is still ahead: those a
-- scheduler of a newer release plans again. SKIP LOCKED: a sequence the
-- sequencer is scanning is planned by that scan, with this release.
SELECT s.id, s.schedule, s.start_at, s.end_at, s.next_run_at::timestamptz AS next_run_at,
    s.tz_version, now()::timestamptz AS db_now
FROM sequences AS s
WHERE s.status = 'active'
  AND s.tz_version < sqlc.arg(tz_version)::text
  AND s.schedule ? 'frequency'
  AND s.next_run_at > now()
LIMIT sqlc.arg(max_sequences)::integer
FOR UPDATE SKIP LOCKED;

-- name: MoveSequenceSlots :exec
-- Sets each sequence's next slot as planned with release tz_version, and
-- stamps the release.
UPDATE sequences AS s
SET next_run_at = u.next_run_at,
    tz_version  = sqlc.arg(tz_version)::text
FROM (
    SELECT unnest(sqlc.arg(ids)::uuid[]) AS id, unnest(sqlc.arg(next_run_ats)::timestamptz[]) AS next_run_at
) AS u
WHERE s.id = u.id;

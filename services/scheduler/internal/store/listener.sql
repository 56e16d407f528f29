-- The listener's held hooks (docs/listener.md, "Routing"; migration
-- 00015). The claim statement (queries.sql) holds a holding project's due
-- hooks; these statements give them back once the project listens again.

-- name: ReleaseListenerHeldHooks :execrows
-- Gives up to batch_size held hooks of the listening projects back to them,
-- oldest first, and paces them: the n-th (from 0, after the `released`
-- already given back in this pass) becomes due at now() + n x spacing, so
-- that the backlog arrives in the order it fell due rather than all at
-- once, where the dispatcher's and the listener's concurrency would
-- scramble it (docs/listener.md, "Release"). Listening is the claim's test,
-- listener_live (migration 00028). hooks_held_idx finds a
-- project's held hooks; a project's held hooks are all read to pick the
-- oldest (a top-N sort), which is bounded by what the window held. A row
-- locked by a claim is skipped (the claim leases or holds it itself; the
-- next release sees the rest). A finished hook (run_at NULL: cancelled
-- meanwhile) only loses its held_due_at, so that it is not found again.
WITH listening AS MATERIALIZED (
    SELECT DISTINCT l.project_id
    FROM listener_presence AS l
    WHERE listener_live(l.connected, l.seen_at)
),
sel AS (
    SELECT h.id, h.held_due_at
    FROM listening
    JOIN hooks AS h ON h.project_id = listening.project_id AND h.held_due_at IS NOT NULL
    -- A gate the planner cannot reorder (a one-time filter): with no
    -- project listening, hooks is not read at all. The join alone was seen
    -- to scan the whole table every pass on a table not yet analyzed, when
    -- the planner took hooks for the outer side and fetched its first row
    -- before finding listening empty.
    WHERE EXISTS (SELECT 1 FROM listening)
    ORDER BY h.held_due_at, h.id
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE OF h SKIP LOCKED
),
ranked AS (
    SELECT sel.id, row_number() OVER (ORDER BY sel.held_due_at, sel.id) - 1 AS n
    FROM sel
)
UPDATE hooks AS h
SET run_at      = CASE WHEN h.run_at IS NULL THEN NULL
                       ELSE now() + make_interval(secs => (sqlc.arg(released)::bigint + ranked.n) * sqlc.arg(spacing_seconds)::float8) END,
    held_due_at = NULL
FROM ranked
WHERE h.id = ranked.id;

-- name: ListenListener :exec
-- Subscribes the connection to the gateway's NOTIFY sundial_listener (a
-- project's first listener socket opened on a gateway; the payload is its
-- id).
LISTEN sundial_listener;

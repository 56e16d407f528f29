-- name: PrefetchDueHooks :many
-- The hooks due within the next window_seconds by the database clock,
-- returning no hook's body, soonest first in each of the window's lanes
-- (services/scheduler/internal/claim, queue.go): up to plain_max hooks
-- without an ordering key (a range read of hooks_due_idx) and up to
-- keyed_max with one (of hooks_due_keyed_idx, migration 00041), so that a
-- backlog of keyed hooks due earlier does not fill the read and leave out
-- the plain hooks due now. With the database's now, so the caller can
-- learn its clock offset.
SELECT p.id, p.run_at::timestamptz AS run_at, now()::timestamptz AS db_now, p.keyed::boolean AS keyed
FROM (
    (SELECT d.id, d.run_at, false AS keyed
     FROM hooks AS d
     WHERE d.status IN ('pending', 'retry') AND d.ordering_key IS NULL
       AND d.run_at <= now() + make_interval(secs => sqlc.arg(window_seconds)::float8)
     ORDER BY d.run_at
     LIMIT sqlc.arg(plain_max)::integer)
    UNION ALL
    (SELECT d.id, d.run_at, true AS keyed
     FROM hooks AS d
     WHERE d.status IN ('pending', 'retry') AND d.ordering_key IS NOT NULL
       AND d.run_at <= now() + make_interval(secs => sqlc.arg(window_seconds)::float8)
     ORDER BY d.run_at
     LIMIT sqlc.arg(keyed_max)::integer)
) AS p;

-- name: LockDueHooks :many
-- The poll's choice: up to batch_size hooks due by the database clock (new,
-- retrying, or with an expired lease), soonest first, locked until the
-- transaction ends; ClaimHooks then claims them in the same transaction.
-- SKIP LOCKED lets several schedulers poll at once without waiting for or
-- taking each other's rows.
SELECT d.id
FROM hooks AS d
WHERE d.status IN ('pending', 'retry') AND d.run_at <= now()
ORDER BY d.run_at
LIMIT sqlc.arg(batch_size)::integer
FOR UPDATE SKIP LOCKED;

-- name: ClaimHooks :many
-- Claims those of ids due within ahead_seconds by the database clock under
-- a fresh lease, counting re-drives (see migration 00008): the hooks the
-- poll locked (LockDueHooks, ahead 0), or the just-in-time claim of hooks
-- the scheduler holds in memory, ahead of their due instant so that the
-- claim's commit is off the delivery's critical path (the caller holds each
-- DueHook until its due_at by the same clock). A hook deleted, finished,
-- rescheduled or claimed by another scheduler meanwhile is skipped: SKIP
-- LOCKED lets several schedulers claim at once without waiting for or
-- double-claiming each other's rows. run_at moves to the lease expiry, so
-- the row is due again only if its result never comes. updated_at is left
-- alone: it is the hook's user-visible update time. One statement for both,
-- chosen by ids alone: its plan is the same at every call, so PostgreSQL
-- keeps one generic plan instead of planning each claim.
WITH due AS (
    SELECT d.id, d.run_at, d.project_id, d.domain, d.ordering_key, d.post_at, d.created_at,
        CASE WHEN d.ordering_key IS NOT NULL THEN d.xmin::text END AS version
    FROM hooks AS d
    WHERE d.id = ANY(sqlc.arg(ids)::uuid[])
      -- Unfinished, said as run_at IS NOT NULL (the same thing by the
      -- table's check) rather than by status, so that hooks_due_idx cannot
      -- serve this lookup by id: with statistics taken while a burst was
      -- still ahead, the planner was seen reading the whole partial index
      -- (every due hook) for each call instead of the primary key.
      AND d.run_at IS NOT NULL
      AND d.run_at <= now() + make_interval(secs => sqlc.arg(ahead_seconds)::float8)
    FOR UPDATE SKIP LOCKED
),
-- Ordering keys (migration 00036, docs/choices.md "Ordering keys"): a
-- keyed hook is leased only as its key's head. heads picks, per key of the
-- claim, the hook that may take the key: the key's head if the claim holds
-- it (a retry, a re-drive, a deferral), else the claim's first of the key
-- in order. taken takes the key for it, if no unfinished hook of the key
-- comes before it, on the key row's newest version (ON CONFLICT DO UPDATE
-- checks its condition there): free when it has no head, or its head is
-- this hook, or its head has finished (no run_at, no 202 waiting for its
-- answer; a failure under the project's 'hold' excepted) or is gone. A
-- head taken since this statement began (updated_at) may be a hook this
-- statement cannot see, so it counts as there. Keys are taken in key
-- order, so two claims wait for each other instead of deadlocking.
heads AS MATERIALIZED (
    SELECT DISTINCT ON (due.project_id, due.ordering_key)
        due.project_id, due.ordering_key, due.id, due.post_at, due.created_at,
        (k.active_hook_id IS NOT DISTINCT FROM due.id) AS is_head
    FROM due
    LEFT JOIN ordering_keys AS k ON k.project_id = due.project_id AND k.key = due.ordering_key
    WHERE due.ordering_key IS NOT NULL
    ORDER BY due.project_id, due.ordering_key, (k.active_hook_id IS NOT DISTINCT FROM due.id) DESC,
        due.post_at, due.created_at, due.id
),
taken AS (
    INSERT INTO ordering_keys AS k (project_id, key, active_hook_id, updated_at)
    SELECT c.project_id, c.ordering_key, c.id, clock_timestamp()
    FROM heads AS c
    WHERE c.is_head OR NOT EXISTS (
        SELECT 1 FROM hooks AS o
        WHERE o.project_id = c.project_id AND o.ordering_key = c.ordering_key AND o.run_at IS NOT NULL
          AND (o.post_at, o.created_at, o.id) < (c.post_at, c.created_at, c.id))
    ORDER BY c.project_id, c.ordering_key
    ON CONFLICT (project_id, key) DO UPDATE
    SET active_hook_id = EXCLUDED.active_hook_id, updated_at = EXCLUDED.updated_at
    WHERE k.active_hook_id IS NULL
       OR k.active_hook_id = EXCLUDED.active_hook_id
       OR (k.updated_at < statement_timestamp() AND NOT EXISTS (
            SELECT 1 FROM hooks AS a JOIN projects AS ap ON ap.id = a.project_id
            WHERE a.id = k.active_hook_id
              AND (a.run_at IS NOT NULL OR a.async_deadline IS NOT NULL
                   OR (a.status = 'failed' AND ap.ordering_on_failure = 'hold'))))
    RETURNING k.active_hook_id AS id
),
-- keyed: the claim's keyed hooks, each with whether it took its key
-- (took_key). A window over due's keyed rows and taken's tells it, not a
-- join of the two: both are as large as the claim, and the plan, which
-- estimates each at a few rows, joined them by a nested loop, comparing
-- every pair (250,000 for a claim of 500). The same holds for every set
-- below that has a row per hook: each is read once, and only sets with a
-- row per unit or project (routed, troubled, probe) are joined to them.
keyed AS MATERIALIZED (
    SELECT m.id, m.project_id, m.domain, m.run_at, m.ordering_key, m.version, m.took_key
    FROM (
        SELECT u.*, bool_or(u.took) OVER (PARTITION BY u.id) AS took_key
        FROM (
            SELECT due.id, due.project_id, due.domain, due.run_at, due.ordering_key, due.version, false AS took
            FROM due
            WHERE due.ordering_key IS NOT NULL
            UNION ALL
            SELECT taken.id, NULL, NULL, NULL, NULL, NULL, true FROM taken
        ) AS u
    ) AS m
    WHERE NOT m.took
),
-- blocked: the keyed hooks that did not take their key, each with whether
-- another transaction has its key's head locked (busy; FOR SHARE SKIP
-- LOCKED finds it so): a batch of results may be finishing that head. The
-- head's end wakes the key's next hook as its own transaction sees the
-- key, so a hook created (or committed) since is not woken, while this
-- claim, which cannot see the end before it commits, finds the head
-- unfinished. A busy key's hooks are looked at again in 100 ms, not 5
-- minutes (decided). Read by index, row by row, not joined to another
-- per-hook set.
blocked AS MATERIALIZED (
    SELECT keyed.id, keyed.project_id, keyed.run_at, keyed.version,
        (k.active_hook_id IS NOT NULL AND head.free IS NULL) AS busy
    FROM keyed
    LEFT JOIN ordering_keys AS k ON k.project_id = keyed.project_id AND k.key = keyed.ordering_key
    LEFT JOIN LATERAL (
        SELECT true AS free FROM hooks AS a WHERE a.id = k.active_hook_id FOR SHARE SKIP LOCKED
    ) AS head ON true
    WHERE NOT keyed.took_key
),
-- free: the claim's hooks that may be leased as far as ordering goes (no
-- key, or the key taken). The keyed hooks that did not take their key are
-- blocked: they wait for the head to finish, whose end wakes the next one
-- (sundial_wake_ordering_key); until then they are rechecked every 5
-- minutes, in case a wake is missed (blocked and decided, below).
free AS MATERIALIZED (
    SELECT due.id, due.project_id, due.domain, due.run_at FROM due WHERE due.ordering_key IS NULL
    UNION ALL
    SELECT keyed.id, keyed.project_id, keyed.domain, keyed.run_at FROM keyed WHERE keyed.took_key
),
-- Listener presence (migration 00015, docs/listener.md "Routing"), one
-- probe of listener_presence's primary key per project of the claim, not
-- per hook: routed holds the due projects that are listening (a row
-- listener_live, migration 00028) or holding (not listening, and the
-- latest resume_until still ahead: hold_until is that window's end). A
-- listening project's hooks are leased and returned with listener set; a
-- holding project's are held until hold_until, as a paused endpoint's,
-- and held_due_at keeps when they fell due, for the release
-- (ReleaseListenerHeldHooks) to restore. Routing wins over the circuit
-- breaker: a listening project's deliveries do not go to its domain, so
-- its domain's pause neither holds them nor takes a probe from them; a
-- holding project's hooks wait for its listener, whatever the breaker
-- says, and take no probe either (the probe would be held, and the pause
-- held up until its lease ran out). MATERIALIZED, as troubled is: inlined,
-- it would be re-run for every hook it is joined to.
routed AS MATERIALIZED (
    SELECT pj.project_id, lp.listening,
           CASE WHEN NOT lp.listening THEN lp.resume_until END AS hold_until
    FROM (SELECT DISTINCT due.project_id FROM due) AS pj
    CROSS JOIN LATERAL (
        SELECT COALESCE(bool_or(listener_live(l.connected, l.seen_at)), false) AS listening,
               max(l.resume_until) AS resume_until
        FROM listener_presence AS l
        WHERE l.project_id = pj.project_id
    ) AS lp
    WHERE lp.listening OR lp.resume_until > now()
),
-- Paused endpoints (breaker.sql, docs/security.md "Circuit breaker and
-- Retry-After"): troubled is the claim's units (project, domain) whose
-- breaker holds a pause, read with one probe of endpoint_breakers' key per
-- distinct unit rather than per hook (a burst's claim of 500 hooks to one
-- domain: one probe, not 1,000), leaving out the routed projects. Usually
-- empty. MATERIALIZED: inlined, PostgreSQL re-ran it for every hook of the
-- outer join (500 x 500 index probes per claim of 500).
troubled AS MATERIALIZED (
    SELECT o.project_id, o.domain, o.paused_until
    FROM (SELECT DISTINCT due.project_id, due.domain FROM due) AS u
    JOIN endpoint_breakers AS o ON o.project_id = u.project_id AND o.domain = u.domain
    WHERE o.paused_until IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM routed WHERE routed.project_id = u.project_id)
),
-- probe takes, for each troubled unit whose pause has ended, its first free
-- hook as the probe and moves the pause to the probe's lease expiry (a
-- concurrent claim that took the probe first makes the row fail the
-- re-checked condition, so one probe per pause).
probe AS (
    UPDATE endpoint_breakers AS b
    SET paused_until  = now() + make_interval(secs => sqlc.arg(lease_seconds)::float8),
        held_until    = GREATEST(b.held_until, now() + make_interval(secs => sqlc.arg(lease_seconds)::float8)),
        probe_hook_id = c.id,
        updated_at    = now()
    FROM (
        SELECT DISTINCT ON (t.project_id, t.domain) t.project_id, t.domain, free.id
        FROM troubled AS t
        JOIN free ON free.project_id = t.project_id AND free.domain = t.domain
        WHERE t.paused_until <= now()
        ORDER BY t.project_id, t.domain, free.run_at, free.id
    ) AS c
    WHERE b.project_id = c.project_id AND b.domain = c.domain AND b.paused_until <= now()
    RETURNING b.project_id, b.domain, b.paused_until, c.id AS probe_id
),
-- decided: where each hook of the claim goes. until is NULL for a lease,
-- else where run_at goes instead: a blocked hook's recheck (a row that
-- changed since this statement's snapshot, whose locked version is not the
-- one the snapshot sees, may have been woken by a head that finished after
-- the snapshot, which taken could not see, and a hook of a busy key may be
-- missed by its head's wake: both are looked at again in 100 ms); a holding listener's hold_until, by_listener set (then
-- held_due_at keeps its due time; the other holds leave held_due_at as it
-- was); a paused unit's pause end (the probe's lease expiry once a probe
-- is out, or a second from now when another claim's probe raced this
-- one). A held hook gets no lease, no attempt and no re-drive, keeps its
-- status, and is returned with deferred set, for the caller to leave out.
decided AS (
    SELECT blocked.id, blocked.project_id, blocked.run_at,
        CASE WHEN blocked.busy
                  OR blocked.version IS DISTINCT FROM (SELECT s.xmin::text FROM hooks AS s WHERE s.id = blocked.id)
             THEN now() + interval '100 milliseconds'
             ELSE now() + interval '5 minutes' END AS until,
        false AS by_listener, false AS listening
    FROM blocked
    UNION ALL
    SELECT free.id, free.project_id, free.run_at,
        CASE WHEN r.hold_until IS NOT NULL THEN r.hold_until
             WHEN t.project_id IS NOT NULL AND free.id IS DISTINCT FROM pr.probe_id
             THEN COALESCE(pr.paused_until, GREATEST(t.paused_until, now() + interval '1 second')) END,
        r.hold_until IS NOT NULL, COALESCE(r.listening, false)
    FROM free
    LEFT JOIN routed AS r ON r.project_id = free.project_id
    LEFT JOIN troubled AS t ON t.project_id = free.project_id AND t.domain = free.domain
    LEFT JOIN probe AS pr ON pr.project_id = free.project_id AND pr.domain = free.domain
)
UPDATE hooks AS h
SET lease_seq        = CASE WHEN d.until IS NULL THEN h.lease_seq + 1 ELSE h.lease_seq END,
    lease_expires_at = CASE WHEN d.until IS NULL
                            THEN now() + make_interval(secs => sqlc.arg(lease_seconds)::float8) END,
    run_at           = COALESCE(d.until, now() + make_interval(secs => sqlc.arg(lease_seconds)::float8)),
    -- A pending hook that still has a lease expiry lost its previous lease.
    redrives         = CASE WHEN d.until IS NOT NULL THEN h.redrives
                            WHEN h.status = 'pending' AND h.lease_expires_at IS NOT NULL
                            THEN h.redrives + 1 ELSE 0 END,
    status           = CASE WHEN d.until IS NULL THEN 'pending' ELSE h.status END,
    -- Kept from the first hold on (a hook held again at the window's end
    -- still fell due when it first did); cleared by a lease.
    held_due_at      = CASE WHEN d.by_listener THEN COALESCE(h.held_due_at, d.run_at)
                            WHEN d.until IS NULL THEN NULL ELSE h.held_due_at END
FROM decided AS d
JOIN projects AS p ON p.id = d.project_id
WHERE h.id = d.id
RETURNING h.id, h.project_id, h.path, h.domain, h.data, h.post_at, h.created_at, h.updated_at,
    h.attempts, h.retry_budget_base, h.lease_seq,
    -- A deferred hook has no lease: its value is not used.
    COALESCE(h.lease_expires_at, now())::timestamptz AS lease_expires_at,
    h.redrives, h.retry_override, p.retry_min_retries, p.retry_delay_secs, p.retry_strategy, p.retry_backoff_factor,
    p.retry_max_delay_secs, p.retry_jitter,
    -- The run_at the hook was claimed for, and the database clock as the
    -- row was returned: the caller publishes the DueHook no sooner than
    -- due_at - db_now after the answer reached it (see claim.releaseAt).
    d.run_at::timestamptz AS due_at, clock_timestamp()::timestamptz AS db_now,
    (d.until IS NOT NULL)::boolean AS deferred,
    -- Leased for the project's listener (DueHook.listener).
    (d.until IS NULL AND d.listening)::boolean AS listener;

-- name: WaitingHooks :many
-- Of the given ids, those still waiting to be claimed within the next
-- window_seconds by the database clock: a just-in-time claim that came too
-- early (run_at > db_now) retries at run_at; one that found the row locked
-- by another transaction (run_at <= db_now) retries shortly.
SELECT d.id, d.run_at::timestamptz AS run_at, now()::timestamptz AS db_now,
    (d.ordering_key IS NOT NULL)::boolean AS keyed
FROM hooks AS d
WHERE d.id = ANY(sqlc.arg(ids)::uuid[])
  -- Unfinished, by run_at rather than status, for the reason
  -- ClaimHooks gives: looked up by primary key, never by hooks_due_idx.
  AND d.run_at IS NOT NULL
  AND d.run_at <= now() + make_interval(secs => sqlc.arg(window_seconds)::float8);

-- name: ListenDue :exec
-- Subscribes the connection to the notifications of migration 00006.
LISTEN sundial_due;

-- Test fixtures of the async tests: what the gateway's ack and nack URLs
-- record, and waits brought to their end.

-- name: NackForTest :execrows
-- What the gateway's nack does to a waiting hook (tests only): the attempt is
-- nacked, its wait ends now, and the answer waits for a scheduler.
UPDATE hook_attempts AS a
SET async_state = 'nacked', async_deadline = now(), answer_pending = true
WHERE a.hook_id = sqlc.arg(hook_id) AND a.lease_seq = sqlc.arg(lease_seq) AND a.async_state = 'waiting';

-- name: AckForTest :execrows
-- What the gateway's ack does to a waiting hook (tests only): the attempt is
-- acked, and the answer waits for a scheduler.
UPDATE hook_attempts AS a
SET async_state = 'acked', answer_pending = true
WHERE a.hook_id = sqlc.arg(hook_id) AND a.lease_seq = sqlc.arg(lease_seq) AND a.async_state = 'waiting';

-- name: AnswerBeforeResultForTest :exec
-- What the gateway does with an answer (state acked or nacked) that comes
-- before the scheduler applied the 202 of the hook in flight (tests only):
-- the attempt in flight is recorded with the answer.
INSERT INTO hook_attempts (
    hook_id, attempt, lease_seq, started_at, duration_seconds, outcome, status_code,
    async_state, async_deadline, async_timeout_secs, answer_pending
)
SELECT h.id, h.attempts + 1, h.lease_seq, now(), 0, 'async', 202, sqlc.arg(state)::text, now(), 300, true
FROM hooks AS h
WHERE h.id = sqlc.arg(hook_id);

-- name: ExpireAsyncWaitForTest :execrows
-- Brings a waiting hook's deadline to now, so a test need not wait for it.
UPDATE hooks SET async_deadline = now() WHERE id = sqlc.arg(id) AND async_deadline IS NOT NULL;

-- Test fixtures beside store/attempts.sql: only tests use them.

-- name: InsertAttemptWithHeadersForTest :exec
-- A successful attempt with the headers of its request and answer, as the
-- scheduler records them.
INSERT INTO hook_attempts (hook_id, attempt, lease_seq, started_at, duration_seconds, outcome, status_code,
    request_headers, response_headers, request_headers_omitted, response_headers_omitted)
VALUES (@hook_id, @attempt, 1, now(), 0.25, 'success', 200,
    sqlc.narg(request_headers)::jsonb, sqlc.narg(response_headers)::jsonb,
    @request_headers_omitted, @response_headers_omitted);

-- name: InsertFailedAttemptForTest :exec
-- A failed attempt of a class, and the hook retried after it, as the
-- scheduler records them.
WITH attempt AS (
    INSERT INTO hook_attempts (hook_id, attempt, lease_seq, started_at, duration_seconds, outcome, status_code,
        error, failure_class)
    VALUES (@hook_id, 1, 1, now(), 0.25, 'failure', sqlc.narg(status_code)::integer, @error, @failure_class)
)
UPDATE hooks SET status = 'retry', attempts = 1, failure_error = @error, failure_class = @failure_class,
    try_at = now() + interval '1 hour', run_at = now() + interval '1 hour'
WHERE id = @hook_id;

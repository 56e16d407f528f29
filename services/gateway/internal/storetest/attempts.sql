-- Test fixtures beside store/attempts.sql: only tests use them.

-- name: InsertAttemptWithHeadersForTest :exec
-- A successful attempt with the headers of its request and answer, as the
-- scheduler records them.
INSERT INTO hook_attempts (hook_id, attempt, lease_seq, started_at, duration_seconds, outcome, status_code,
    request_headers, response_headers, request_headers_omitted, response_headers_omitted)
VALUES (@hook_id, @attempt, 1, now(), 0.25, 'success', 200,
    sqlc.narg(request_headers)::jsonb, sqlc.narg(response_headers)::jsonb,
    @request_headers_omitted, @response_headers_omitted);

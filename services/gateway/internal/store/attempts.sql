-- name: ListHookAttempts :many
-- A hook's recorded attempts, oldest first, if the hook is the project's.
SELECT a.attempt, a.started_at, a.duration_seconds, a.outcome, a.status_code, a.error,
    a.response_excerpt, a.async_state, a.async_deadline, a.async_timeout_secs, a.ack_body,
    a.request_headers, a.response_headers, a.request_headers_omitted, a.response_headers_omitted, a.failure_class
FROM hook_attempts AS a
JOIN hooks AS h ON h.id = a.hook_id
WHERE h.project_id = @project_id AND h.id = @hook_id
ORDER BY a.attempt
LIMIT 1000;

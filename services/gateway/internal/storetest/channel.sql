-- Test fixtures and read-backs beside store/channel.sql: only tests and
-- benchmarks use them.

-- name: SetChannelHealthForTest :exec
-- Test fixture: what the notifier records after its tries.
UPDATE notification_channels
SET consecutive_failures = @consecutive_failures,
    last_success_at      = @last_success_at,
    last_failure_at      = @last_failure_at,
    last_error           = @last_error
WHERE id = @id;

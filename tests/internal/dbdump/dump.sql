-- What a stolen copy of the database shows: every row of every table, as
-- text, for tests that search it for secrets (tests/e2e secret_test.go).

-- name: DumpRows :many
SELECT 'projects'::text AS tbl, t::text AS row FROM projects AS t
UNION ALL SELECT 'api_keys', t::text FROM api_keys AS t
UNION ALL SELECT 'signing_keys', t::text FROM signing_keys AS t
UNION ALL SELECT 'hooks', t::text FROM hooks AS t
UNION ALL SELECT 'hook_attempts', t::text FROM hook_attempts AS t
UNION ALL SELECT 'usage_periods', t::text FROM usage_periods AS t
UNION ALL SELECT 'idempotency_keys', t::text FROM idempotency_keys AS t
UNION ALL SELECT 'notification_channels', t::text FROM notification_channels AS t
UNION ALL SELECT 'alerts', t::text FROM alerts AS t
UNION ALL SELECT 'alert_groups', t::text FROM alert_groups AS t
UNION ALL SELECT 'alert_followups', t::text FROM alert_followups AS t
UNION ALL SELECT 'alert_sends', t::text FROM alert_sends AS t
UNION ALL SELECT 'alert_send_attempts', t::text FROM alert_send_attempts AS t
UNION ALL SELECT 'failing_endpoints', t::text FROM failing_endpoints AS t
UNION ALL SELECT 'endpoint_breakers', t::text FROM endpoint_breakers AS t
UNION ALL SELECT 'listener_tickets', t::text FROM listener_tickets AS t
UNION ALL SELECT 'listener_presence', t::text FROM listener_presence AS t;

-- Test fixtures and read-backs beside store/project.sql: only tests and
-- benchmarks use them.

-- name: GetAuthorizationHeaderForTest :one
-- Test fixture: the write-only value, to check what a change stored.
SELECT authorization_header_sealed FROM projects WHERE id = @id;

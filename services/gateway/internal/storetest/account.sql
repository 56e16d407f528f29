-- Test helpers for the dashboard's sessions and links.

-- name: AgeSessions :exec
-- Moves every session of a user back in time by age (idle and absolute).
UPDATE user_sessions
SET last_seen_at = last_seen_at - @age::interval,
    expires_at = expires_at - @age::interval,
    created_at = created_at - @age::interval
WHERE user_id = @user_id;

-- name: ExpirePasswordTokens :exec
UPDATE password_tokens SET expires_at = now() - interval '1 second' WHERE user_id = @user_id;

-- name: CountUserSessions :one
SELECT count(*) FROM user_sessions WHERE user_id = @user_id;

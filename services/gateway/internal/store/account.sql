-- People who sign in to the dashboard (internal/account): users, their
-- memberships, sessions, set-password links and sign-in throttling
-- (docs/dashboard.md).

-- name: UpsertUser :one
-- Creates the user, or returns the existing one with that e-mail.
INSERT INTO users (id, email)
VALUES (@id, @email)
ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email
RETURNING id, email;

-- name: GetUserByEmail :one
SELECT id, email, password_hash FROM users WHERE email = @email;

-- name: GetUserByID :one
SELECT id, email FROM users WHERE id = @id;

-- name: SetUserPassword :exec
UPDATE users SET password_hash = @password_hash, updated_at = now() WHERE id = @id;

-- name: UpsertMembership :exec
INSERT INTO memberships (user_id, project_id, role)
VALUES (@user_id, @project_id, @role)
ON CONFLICT (user_id, project_id) DO UPDATE SET role = EXCLUDED.role;

-- name: ListUserProjects :many
-- The projects a user is a member of, by name.
SELECT p.id, p.name, m.role
FROM memberships AS m
JOIN projects AS p ON p.id = m.project_id
WHERE m.user_id = @user_id
ORDER BY p.name, p.id;

-- name: GetMembership :one
-- The user's role in a project and the project's name and domain; no row
-- when the user is not a member.
SELECT p.id, p.name, p.domain, m.role
FROM memberships AS m
JOIN projects AS p ON p.id = m.project_id
WHERE m.user_id = @user_id AND m.project_id = @project_id;

-- name: CreateSession :exec
INSERT INTO user_sessions (token_hash, user_id, expires_at)
VALUES (@token_hash, @user_id, now() + @absolute::interval);

-- name: TouchSession :one
-- The session's user when the session is alive (before its absolute
-- expiry and less than idle after its last use); last_seen_at is written
-- at most once per touch_every, so a page load rarely writes.
WITH live AS (
    SELECT s.token_hash, s.user_id, s.last_seen_at
    FROM user_sessions AS s
    WHERE s.token_hash = @token_hash
      AND s.expires_at > now()
      AND s.last_seen_at > now() - @idle::interval
), touched AS (
    UPDATE user_sessions AS s SET last_seen_at = now()
    FROM live
    WHERE s.token_hash = live.token_hash
      AND live.last_seen_at <= now() - @touch_every::interval
    RETURNING s.token_hash
)
SELECT live.user_id, u.email
FROM live JOIN users AS u ON u.id = live.user_id;

-- name: DeleteSession :exec
DELETE FROM user_sessions WHERE token_hash = @token_hash;

-- name: DeleteUserSessions :execrows
DELETE FROM user_sessions WHERE user_id = @user_id;

-- name: DeleteExpiredSessions :execrows
-- At most max_rows ended sessions (account.Sweeper).
DELETE FROM user_sessions
WHERE token_hash IN (
    SELECT token_hash FROM user_sessions
    WHERE expires_at <= now() OR last_seen_at <= now() - @idle::interval
    LIMIT @max_rows
);

-- name: DeleteExpiredPasswordTokens :execrows
DELETE FROM password_tokens
WHERE token_hash IN (
    SELECT token_hash FROM password_tokens WHERE expires_at <= now() LIMIT @max_rows
);

-- name: DeleteStaleSigninFailures :execrows
DELETE FROM signin_failures
WHERE key IN (
    SELECT key FROM signin_failures WHERE window_start <= now() - @span::interval LIMIT @max_rows
);

-- name: CreatePasswordToken :exec
INSERT INTO password_tokens (token_hash, user_id, expires_at)
VALUES (@token_hash, @user_id, now() + @ttl::interval);

-- name: GetPasswordToken :one
-- The link's user when the link is still valid (GET shows the form).
SELECT t.user_id, u.email
FROM password_tokens AS t JOIN users AS u ON u.id = t.user_id
WHERE t.token_hash = @token_hash AND t.expires_at > now();

-- name: UsePasswordToken :one
-- Uses the link up in one statement: deletes it, and when it had not
-- expired sets the user's password and ends the user's sessions (whoever
-- held the old password is out). No row when it was used already; valid
-- is false for an expired link (deleted too, nothing else changed).
WITH used AS (
    DELETE FROM password_tokens
    WHERE password_tokens.token_hash = @token_hash
    RETURNING user_id, (expires_at > now()) AS valid
), changed AS (
    UPDATE users SET password_hash = @password_hash, updated_at = now()
    FROM used
    WHERE users.id = used.user_id AND used.valid
    RETURNING users.id
), ended AS (
    DELETE FROM user_sessions AS s
    USING changed
    WHERE s.user_id = changed.id
)
SELECT user_id, valid::boolean AS valid FROM used;

-- name: GetSigninFailures :many
-- The live failure counts of the given keys: those whose window has not
-- ended. retry_after is when the window ends.
SELECT key, failures, (window_start + @span::interval)::timestamptz AS retry_after, now()::timestamptz AS db_now
FROM signin_failures
WHERE key = ANY(@keys::text[]) AND window_start > now() - @span::interval;

-- name: AddSigninFailure :exec
-- Counts a failure for key; a window that has ended starts again.
INSERT INTO signin_failures (key, failures, window_start)
VALUES (@key, 1, now())
ON CONFLICT (key) DO UPDATE SET
    failures = CASE WHEN signin_failures.window_start <= now() - @span::interval
                    THEN 1 ELSE signin_failures.failures + 1 END,
    window_start = CASE WHEN signin_failures.window_start <= now() - @span::interval
                        THEN now() ELSE signin_failures.window_start END,
    updated_at = now();

-- name: GetProjectUsage :one
-- The current billing period's use and the plan's quota (0 = unlimited).
SELECT p.plan_quota,
       COALESCE(u.hooks_created, 0)::bigint AS hooks_created
FROM projects AS p
LEFT JOIN usage_periods AS u
    ON u.project_id = p.id
   AND u.period_start = date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
WHERE p.id = @project_id;

package account

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Session returns the user of a live session token, writing last_seen_at
// at most once per TouchEvery.
func (s *Service) Session(ctx context.Context, token string) (User, error) {
	if token == "" {
		return User{}, ErrNoSession
	}
	row, err := s.q.TouchSession(ctx, store.TouchSessionParams{
		TokenHash: hashToken(token), Idle: interval(s.cfg.SessionIdle), TouchEvery: interval(s.cfg.TouchEvery),
	})
	if notFound(err) {
		return User{}, ErrNoSession
	}
	if err != nil {
		return User{}, fmt.Errorf("session: %w", err)
	}
	return User{ID: row.UserID, Email: row.Email}, nil
}

// startSession creates a session for the user and returns its token.
func (s *Service) startSession(ctx context.Context, userID uuid.UUID) (string, error) {
	token, hash, err := newToken()
	if err != nil {
		return "", err
	}
	if err := s.q.CreateSession(ctx, store.CreateSessionParams{
		TokenHash: hash, UserID: userID, Absolute: interval(s.cfg.SessionAbsolute),
	}); err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	return token, nil
}

// SignOut ends one session.
func (s *Service) SignOut(ctx context.Context, token string) error {
	if err := s.q.DeleteSession(ctx, hashToken(token)); err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	return nil
}

// SignOutEverywhere ends every session of the user.
func (s *Service) SignOutEverywhere(ctx context.Context, userID uuid.UUID) (int64, error) {
	n, err := s.q.DeleteUserSessions(ctx, userID)
	if err != nil {
		return 0, fmt.Errorf("sign out everywhere: %w", err)
	}
	return n, nil
}

// CSRFToken is the form token of a session: derived from the session's
// token, which only the browser holding the (HttpOnly) cookie knows.
func CSRFToken(sessionToken string) string {
	h := sha256.Sum256([]byte("sundial-csrf\x00" + sessionToken))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// SessionAbsolute is how long a session lives at most (the cookie's
// Max-Age).
func (s *Service) SessionAbsolute() time.Duration { return s.cfg.SessionAbsolute }

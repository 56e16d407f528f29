package account

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// SetPasswordPath is the dashboard path of a set-password link, before its
// token.
const SetPasswordPath = "/dashboard/set-password?token="

// NewPasswordLink creates a one-time set-password link for the user and
// returns its token (only its SHA-256 is stored).
func (s *Service) NewPasswordLink(ctx context.Context, userID uuid.UUID) (string, error) {
	token, hash, err := newToken()
	if err != nil {
		return "", err
	}
	if err := s.q.CreatePasswordToken(ctx, store.CreatePasswordTokenParams{
		TokenHash: hash, UserID: userID, Ttl: interval(s.cfg.LinkTTL),
	}); err != nil {
		return "", fmt.Errorf("create set-password link: %w", err)
	}
	return token, nil
}

// CheckPasswordLink returns the user of a valid link without using it.
func (s *Service) CheckPasswordLink(ctx context.Context, token string) (User, error) {
	row, err := s.q.GetPasswordToken(ctx, hashToken(token))
	if notFound(err) {
		return User{}, ErrBadLink
	}
	if err != nil {
		return User{}, fmt.Errorf("set-password link: %w", err)
	}
	return User{ID: row.UserID, Email: row.Email}, nil
}

// UsePasswordLink sets the password of the link's user and uses the link
// up, in one statement; a link works once. It ends the user's other
// sessions (whoever held the old password is out) and starts a session,
// returning its token.
func (s *Service) UsePasswordLink(ctx context.Context, token, password string) (string, error) {
	hash, err := HashPassword(password)
	if err != nil {
		return "", err
	}
	row, err := s.q.UsePasswordToken(ctx, store.UsePasswordTokenParams{TokenHash: hashToken(token), PasswordHash: &hash})
	if notFound(err) || (err == nil && !row.Valid) {
		return "", ErrBadLink
	}
	if err != nil {
		return "", fmt.Errorf("set-password link: %w", err)
	}
	return s.startSession(ctx, row.UserID)
}

package account

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// SignIn checks an e-mail and password from addr and starts a session,
// returning its token. A wrong e-mail and a wrong password are both
// ErrBadCredentials, after the same work (a dummy hash is checked for an
// unknown e-mail). Too many failures from the address are a
// *ThrottledError. Failures are counted per address only: counting them
// per account would let anyone lock a known user out from everywhere, and
// a success does not clear an address's count (one's own account would
// reset a guesser's).
func (s *Service) SignIn(ctx context.Context, email, password string, addr netip.Addr) (string, User, error) {
	email = NormalizeEmail(email)
	keys := []string{"addr:" + addr.String()}
	if err := s.throttled(ctx, keys); err != nil {
		return "", User{}, err
	}
	row, err := s.q.GetUserByEmail(ctx, email)
	if err != nil && !notFound(err) {
		return "", User{}, fmt.Errorf("sign in: %w", err)
	}
	hash := dummyHash()
	if err == nil && row.PasswordHash != nil {
		hash = *row.PasswordHash
	}
	ok, checkErr := checkPassword(password, hash)
	if checkErr != nil {
		return "", User{}, fmt.Errorf("sign in: %w", checkErr)
	}
	if !ok || err != nil || row.PasswordHash == nil {
		return "", User{}, s.fail(ctx, keys)
	}
	token, err := s.startSession(ctx, row.ID)
	if err != nil {
		return "", User{}, err
	}
	return token, User{ID: row.ID, Email: row.Email}, nil
}

// throttled is a *ThrottledError when one of keys has MaxFailures in the
// current window.
func (s *Service) throttled(ctx context.Context, keys []string) error {
	rows, err := s.q.GetSigninFailures(ctx, store.GetSigninFailuresParams{Span: interval(s.cfg.FailureWindow), Keys: keys})
	if err != nil {
		return fmt.Errorf("sign-in failures: %w", err)
	}
	var wait time.Duration
	for _, r := range rows {
		if int(r.Failures) >= s.cfg.MaxFailures {
			wait = max(wait, r.RetryAfter.Sub(r.DbNow))
		}
	}
	if wait > 0 {
		return &ThrottledError{RetryAfter: wait}
	}
	return nil
}

// fail counts a failure for each key and returns ErrBadCredentials.
func (s *Service) fail(ctx context.Context, keys []string) error {
	var errs []error
	for _, k := range keys {
		if err := s.q.AddSigninFailure(ctx, store.AddSigninFailureParams{Key: k, Span: interval(s.cfg.FailureWindow)}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("count sign-in failure: %w", err)
	}
	return ErrBadCredentials
}

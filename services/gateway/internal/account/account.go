// Package account keeps the people who sign in to the dashboard: users
// and their passwords (argon2id), memberships and roles in projects,
// sessions, one-time set-password links and the throttling of failed
// sign-ins shared by every gateway replica (docs/dashboard.md).
package account

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Role is a user's role in a project.
type Role string

// The roles, from most to least allowed.
const (
	Owner  Role = "owner"
	Member Role = "member"
	Viewer Role = "viewer"
)

// rank orders the roles: a higher rank may do all a lower one may.
func (r Role) rank() int {
	switch r {
	case Owner:
		return 3
	case Member:
		return 2
	case Viewer:
		return 1
	}
	return 0
}

// AtLeast reports whether r may do what min may.
func (r Role) AtLeast(min Role) bool { return r.rank() >= min.rank() && min.rank() > 0 }

// ParseRole accepts owner, member or viewer.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if r.rank() == 0 {
		return "", fmt.Errorf("%w: %q", ErrBadRole, s)
	}
	return r, nil
}

// Config holds the timings of docs/dashboard.md. They are not read from
// the environment; tests shorten them. Zero fields take DefaultConfig's.
type Config struct {
	// SessionIdle ends a session this long after its last use (12 h).
	SessionIdle time.Duration
	// SessionAbsolute ends a session this long after sign-in (7 d).
	SessionAbsolute time.Duration
	// TouchEvery bounds the writes of last_seen_at (1 min).
	TouchEvery time.Duration
	// LinkTTL is the life of a set-password link (24 h).
	LinkTTL time.Duration
	// MaxFailures failed sign-ins per FailureWindow from one address (5
	// in 15 min) are followed by 429s for it until the window ends.
	MaxFailures   int
	FailureWindow time.Duration
}

// DefaultConfig is the configuration of docs/dashboard.md.
func DefaultConfig() Config {
	return Config{
		SessionIdle: 12 * time.Hour, SessionAbsolute: 7 * 24 * time.Hour, TouchEvery: time.Minute,
		LinkTTL: 24 * time.Hour, MaxFailures: 5, FailureWindow: 15 * time.Minute,
	}
}

// Errors of the Service.
var (
	// ErrBadCredentials is a wrong e-mail or a wrong password: the same
	// error for both.
	ErrBadCredentials = errors.New("wrong e-mail or password")
	// ErrNoSession is a missing, unknown or expired session.
	ErrNoSession = errors.New("no session")
	// ErrBadLink is an unknown, used or expired set-password link.
	ErrBadLink = errors.New("this link is not valid: it was used already or has expired")
	// ErrNotMember is a project the user is not a member of (or that does
	// not exist: the two are not told apart).
	ErrNotMember = errors.New("not a member of the project")
	// ErrBadRole is a role other than owner, member or viewer.
	ErrBadRole = errors.New("role: want owner, member or viewer")
	// ErrUnknownProject is a membership in a project that does not exist.
	ErrUnknownProject = errors.New("no such project")
	// ErrBadEmail is an e-mail the users table refuses.
	ErrBadEmail = errors.New("email: want an address of 3 to 254 characters with an @")
)

// ThrottledError is a sign-in refused because of too many failures.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many failed sign-ins; try again in %s", e.RetryAfter.Round(time.Second))
}

// User is a signed-in person.
type User struct {
	ID    uuid.UUID
	Email string
}

// Project is a project as a member sees it, with the member's role.
type Project struct {
	ID     uuid.UUID
	Name   string
	Domain string
	Role   Role
}

// Service is the one writer of users, memberships, sessions, links and
// sign-in failures.
type Service struct {
	q   *store.Queries
	cfg Config
}

// NewService returns a Service on q.
func NewService(q *store.Queries, cfg Config) *Service {
	return &Service{q: q, cfg: cfg.withDefaults()}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	c.SessionIdle = pick(c.SessionIdle, d.SessionIdle)
	c.SessionAbsolute = pick(c.SessionAbsolute, d.SessionAbsolute)
	c.TouchEvery = pick(c.TouchEvery, d.TouchEvery)
	c.LinkTTL = pick(c.LinkTTL, d.LinkTTL)
	c.FailureWindow = pick(c.FailureWindow, d.FailureWindow)
	if c.MaxFailures <= 0 {
		c.MaxFailures = d.MaxFailures
	}
	return c
}

// NormalizeEmail lower-cases and trims an e-mail as the users table wants it.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func validEmail(email string) bool {
	return len(email) >= 3 && len(email) <= 254 && strings.Contains(email, "@")
}

// newToken returns a random 32-byte token, URL-safe, and its SHA-256 (what
// is stored).
func newToken() (string, []byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	return token, hashToken(token), nil
}

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

func interval(d time.Duration) pgtype.Interval {
	return pgtype.Interval{Microseconds: d.Microseconds(), Valid: true}
}

func notFound(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

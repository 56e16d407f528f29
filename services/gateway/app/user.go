package app

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// NewUser is a person to give a role in a project (`gateway admin
// create-user`).
type NewUser struct {
	Email     string
	ProjectID string
	// Role is owner, member or viewer.
	Role string
	// Password, when set, is the user's password at once, and no link is
	// made: for demos (`make run`) only. Never log it.
	Password string
}

// CreatedUser is the outcome of CreateUser.
type CreatedUser struct {
	UserID string
	Email  string
	// SetPasswordPath is the one-time set-password link's path (24 h),
	// to be put after the public URL; empty when a Password was given.
	SetPasswordPath string
}

// Errors of CreateUser, for the command line to name the flag.
var (
	ErrBadEmail       = account.ErrBadEmail
	ErrBadRole        = account.ErrBadRole
	ErrUnknownProject = account.ErrUnknownProject
	ErrWeakPassword   = account.ErrWeakPassword
)

// CreateUser creates the user when the e-mail is new, gives them the role in
// the project (replacing the one they had), and makes a set-password link,
// or sets Password.
func CreateUser(ctx context.Context, db Database, u NewUser) (CreatedUser, error) {
	role, err := account.ParseRole(u.Role)
	if err != nil {
		return CreatedUser{}, err
	}
	projectID, err := uuid.Parse(u.ProjectID)
	if err != nil {
		return CreatedUser{}, fmt.Errorf("%w: %q is not a project id", ErrUnknownProject, u.ProjectID)
	}
	pool, err := postgres.Connect(ctx, db.URL, 2)
	if err != nil {
		return CreatedUser{}, err
	}
	defer pool.Close()
	accounts := account.NewService(store.New(pool), account.Config{})
	user, err := accounts.AddMember(ctx, u.Email, projectID, role)
	if err != nil {
		return CreatedUser{}, err
	}
	out := CreatedUser{UserID: user.ID.String(), Email: user.Email}
	if u.Password != "" {
		return out, accounts.SetPassword(ctx, user.ID, u.Password)
	}
	token, err := accounts.NewPasswordLink(ctx, user.ID)
	if err != nil {
		return CreatedUser{}, err
	}
	out.SetPasswordPath = account.SetPasswordPath + token
	return out, nil
}

package account

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// foreignKeyViolation is PostgreSQL's SQLSTATE for a missing referenced
// row: here, the project.
const foreignKeyViolation = "23503"

// AddMember creates the user when the e-mail is new and gives them role
// in the project (replacing a role they had).
func (s *Service) AddMember(ctx context.Context, email string, projectID uuid.UUID, role Role) (User, error) {
	email = NormalizeEmail(email)
	if !validEmail(email) {
		return User{}, ErrBadEmail
	}
	if role.rank() == 0 {
		return User{}, fmt.Errorf("%w: %q", ErrBadRole, role)
	}
	row, err := s.q.UpsertUser(ctx, store.UpsertUserParams{ID: uuid.New(), Email: email})
	if err != nil {
		return User{}, fmt.Errorf("create user: %w", err)
	}
	err = s.q.UpsertMembership(ctx, store.UpsertMembershipParams{UserID: row.ID, ProjectID: projectID, Role: string(role)})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == foreignKeyViolation {
		return User{}, ErrUnknownProject
	}
	if err != nil {
		return User{}, fmt.Errorf("add membership: %w", err)
	}
	return User{ID: row.ID, Email: row.Email}, nil
}

// SetPassword sets a user's password directly: for demos (`make run`),
// never through the dashboard, which uses links.
func (s *Service) SetPassword(ctx context.Context, userID uuid.UUID, password string) error {
	hash, err := HashPassword(password)
	if err != nil {
		return err
	}
	if err := s.q.SetUserPassword(ctx, store.SetUserPasswordParams{ID: userID, PasswordHash: &hash}); err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	return nil
}

// Projects are the projects the user is a member of, by name.
func (s *Service) Projects(ctx context.Context, userID uuid.UUID) ([]Project, error) {
	rows, err := s.q.ListUserProjects(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	out := make([]Project, len(rows))
	for i, r := range rows {
		out[i] = Project{ID: r.ID, Name: r.Name, Role: Role(r.Role)}
	}
	return out, nil
}

// Membership is the project as the user sees it, or ErrNotMember.
func (s *Service) Membership(ctx context.Context, userID, projectID uuid.UUID) (Project, error) {
	r, err := s.q.GetMembership(ctx, store.GetMembershipParams{UserID: userID, ProjectID: projectID})
	if notFound(err) {
		return Project{}, ErrNotMember
	}
	if err != nil {
		return Project{}, fmt.Errorf("membership: %w", err)
	}
	return Project{ID: r.ID, Name: r.Name, Domain: r.Domain, Role: Role(r.Role)}, nil
}

package dashboard

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/signingkey"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// AdminDeps are what the keys, settings, listeners, channels and sequences
// pages use: the same services the API's handlers call (internal/api
// keys.go, project.go, channels.go, sequences.go), so a change made here
// takes the API's one path.
type AdminDeps struct {
	APIKeys     APIKeyManager
	SigningKeys SigningKeyManager
	// KeyCache is the API's cache of valid keys: a key revoked here is
	// forgotten by this process at once, as the API's revocation does.
	KeyCache KeyForgetter
	Project  ProjectSettings
	Presence PresenceReader
	Channels ChannelManager
	// ChannelTestWait is how long a send test waits for the first try;
	// zero: channel.DefaultTestWait, as the API.
	ChannelTestWait time.Duration
	Sequences       SequenceManager
}

// APIKeyManager creates, lists and revokes a project's API keys
// (*apikey.Service).
type APIKeyManager interface {
	Create(ctx context.Context, projectID uuid.UUID, name string) (apikey.Created, error)
	List(ctx context.Context, projectID uuid.UUID) ([]apikey.Info, error)
	Revoke(ctx context.Context, projectID, id uuid.UUID) error
}

// SigningKeyManager lists, rotates and revokes a project's signing keys
// (*signingkey.Service).
type SigningKeyManager interface {
	List(ctx context.Context, projectID uuid.UUID) ([]signingkey.Key, error)
	Rotate(ctx context.Context, projectID uuid.UUID, grace time.Duration) ([]signingkey.Key, error)
	Revoke(ctx context.Context, projectID, id uuid.UUID) error
}

// KeyForgetter drops a revoked key from the API's key cache
// (*keycache.Cache).
type KeyForgetter interface {
	Forget(keyID uuid.UUID)
}

// ProjectSettings reads and changes a project's settings (*project.Service).
type ProjectSettings interface {
	Get(ctx context.Context, projectID uuid.UUID) (project.Settings, error)
	Update(ctx context.Context, projectID uuid.UUID, p project.Patch) (project.Settings, error)
}

// PresenceReader reads a project's listener presence (*store.Queries).
type PresenceReader interface {
	ListProjectPresence(ctx context.Context, projectID uuid.UUID) ([]store.ListProjectPresenceRow, error)
	CountProjectHeldHooks(ctx context.Context, projectID uuid.UUID) (int64, error)
}

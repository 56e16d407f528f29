package sundial

import (
	"context"
	"time"
)

// APIKey is one of the project's API keys; the key itself is never shown
// again after its creation, only its prefix.
type APIKey struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Prefix     string    `json:"prefix"`
	CreatedAt  time.Time `json:"createdAt"`
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
	RevokedAt  time.Time `json:"revokedAt,omitzero"`
}

// NewAPIKey is a key just created, the one time Key is shown.
type NewAPIKey struct {
	APIKey
	Key string `json:"key"`
}

// CreateAPIKeyRequest names a new key (up to 100 characters; may be
// empty).
type CreateAPIKeyRequest struct {
	Name string `json:"name,omitempty"`
}

// APIKeyService is the API keys part of the API.
type APIKeyService struct{ c *Client }

// List returns the project's API keys, revoked ones included, oldest first
// (GET /v1/api-keys).
func (s *APIKeyService) List(ctx context.Context) ([]APIKey, error) {
	return get[[]APIKey](ctx, s.c, call{method: "GET", path: "/api-keys"})
}

// Create makes a new API key (POST /v1/api-keys). Store NewAPIKey.Key: it
// cannot be shown again.
func (s *APIKeyService) Create(ctx context.Context, req CreateAPIKeyRequest) (NewAPIKey, error) {
	return get[NewAPIKey](ctx, s.c, call{method: "POST", path: "/api-keys", body: req})
}

// Revoke revokes an API key (DELETE /v1/api-keys/{id}). The project's last
// usable key cannot be revoked (409).
func (s *APIKeyService) Revoke(ctx context.Context, id string) error {
	p, err := pathOf("/api-keys", "id", id)
	if err != nil {
		return err
	}
	return s.c.do(ctx, call{method: "DELETE", path: p}, nil)
}

// The states of a signing key.
const (
	SigningKeyActive   = "active"
	SigningKeyRetiring = "retiring"
)

// SigningKey is a key that signs the project's deliveries.
type SigningKey struct {
	ID string `json:"id"`
	// State is SigningKeyActive or SigningKeyRetiring.
	State string `json:"state"`
	// Key verifies Sundial-Signature (pass it to Verify or NewHandler).
	Key string `json:"key"`
	// StandardSecret is the same key as Standard Webhooks libraries take
	// it (whsec_...); Verify accepts it too.
	StandardSecret string    `json:"standardSecret"`
	CreatedAt      time.Time `json:"createdAt"`
	// ExpiresAt is when a retiring key stops signing.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// RotateSigningKeyRequest sets the retiring key's grace period (3600 to
// 604800 seconds; 0: the default, 24 hours).
type RotateSigningKeyRequest struct {
	GracePeriodSecs int `json:"gracePeriodSecs,omitempty"`
}

// SigningKeyService is the signing keys part of the API.
type SigningKeyService struct{ c *Client }

// List returns the active key and, during a rotation, the retiring one
// (GET /v1/signing-keys).
func (s *SigningKeyService) List(ctx context.Context) ([]SigningKey, error) {
	return get[[]SigningKey](ctx, s.c, call{method: "GET", path: "/signing-keys"})
}

// Rotate makes a new active key; the previous one retires for the grace
// period (POST /v1/signing-keys/rotate). It returns the new key first.
func (s *SigningKeyService) Rotate(ctx context.Context, req RotateSigningKeyRequest) ([]SigningKey, error) {
	return get[[]SigningKey](ctx, s.c, call{method: "POST", path: "/signing-keys/rotate", body: req})
}

// Revoke deletes the retiring key before its grace period ends
// (DELETE /v1/signing-keys/{id}); the active key cannot be revoked (409).
func (s *SigningKeyService) Revoke(ctx context.Context, id string) error {
	p, err := pathOf("/signing-keys", "id", id)
	if err != nil {
		return err
	}
	return s.c.do(ctx, call{method: "DELETE", path: p}, nil)
}

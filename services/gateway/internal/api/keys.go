package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/signing"
	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/signingkey"
)

// APIKeys creates, lists and revokes a project's API keys.
type APIKeys interface {
	Create(ctx context.Context, projectID uuid.UUID, name string) (apikey.Created, error)
	List(ctx context.Context, projectID uuid.UUID) ([]apikey.Info, error)
	Revoke(ctx context.Context, projectID, id uuid.UUID) error
}

// SigningKeys lists, rotates and revokes a project's signing keys.
type SigningKeys interface {
	List(ctx context.Context, projectID uuid.UUID) ([]signingkey.Key, error)
	Rotate(ctx context.Context, projectID uuid.UUID, grace time.Duration) ([]signingkey.Key, error)
	Revoke(ctx context.Context, projectID, id uuid.UUID) error
}

// KeyDeps is what managing API keys and signing keys needs, set by app.New.
type KeyDeps struct {
	APIKeys     APIKeys
	SigningKeys SigningKeys
}

// keyManagement serves /v1/api-keys and /v1/signing-keys.
type keyManagement struct {
	KeyDeps
	cfg   Config
	cache KeyCache
}

var (
	errAPIKeyNotFound     = newError(http.StatusNotFound, CodeNotFound, "no such API key in this project")
	errSigningKeyNotFound = newError(http.StatusNotFound, CodeNotFound, "no such signing key in this project")
)

// ListApiKeys lists the project's API keys (GET /v1/api-keys).
func (k keyManagement) ListApiKeys(ctx context.Context, _ gen.ListApiKeysRequestObject) (gen.ListApiKeysResponseObject, error) {
	keys, err := k.APIKeys.List(ctx, projectOf(ctx))
	if err != nil {
		return nil, internal(err)
	}
	data := make([]gen.ApiKey, len(keys))
	for i, key := range keys {
		data[i] = toAPIKey(key)
	}
	return gen.ListApiKeys200JSONResponse{Body: gen.ApiKeyListResponse{Data: data}}, nil
}

// CreateApiKey creates an API key (POST /v1/api-keys). The response is the
// only place the key ever appears.
func (k keyManagement) CreateApiKey(ctx context.Context, req gen.CreateApiKeyRequestObject) (gen.CreateApiKeyResponseObject, error) {
	var name string
	if req.Body != nil && req.Body.Name != nil {
		name = *req.Body.Name
	}
	created, err := k.APIKeys.Create(ctx, projectOf(ctx), name)
	var bad *apikey.NameError
	switch {
	case errors.As(err, &bad):
		return nil, invalid(Detail{Field: "name", Message: bad.Message})
	case err != nil:
		return nil, internal(err)
	}
	info := toAPIKey(created.Info)
	return gen.CreateApiKey201JSONResponse{Body: gen.NewApiKeyResponse{Data: gen.NewApiKey{
		Id: info.Id, Name: info.Name, Prefix: info.Prefix, CreatedAt: info.CreatedAt,
		LastUsedAt: info.LastUsedAt, RevokedAt: info.RevokedAt, Key: created.Plain,
	}}}, nil
}

// RevokeApiKey revokes an API key (DELETE /v1/api-keys/{id}).
func (k keyManagement) RevokeApiKey(ctx context.Context, req gen.RevokeApiKeyRequestObject) (gen.RevokeApiKeyResponseObject, error) {
	id, err := uuid.Parse(req.Id)
	if err != nil {
		return nil, errAPIKeyNotFound
	}
	err = k.APIKeys.Revoke(ctx, projectOf(ctx), id)
	// This process stops accepting the key at once (after a failure too:
	// the revocation may have committed); other replicas within their
	// cache's TTL. An id that is not the project's, or its last key,
	// revoked nothing.
	if !errors.Is(err, postgres.ErrNotFound) && !errors.Is(err, apikey.ErrLastKey) {
		k.cache.Forget(id)
	}
	switch {
	case errors.Is(err, postgres.ErrNotFound):
		return nil, errAPIKeyNotFound
	case errors.Is(err, apikey.ErrLastKey):
		return nil, newError(http.StatusConflict, CodeConflict, apikey.ErrLastKey.Error())
	case err != nil:
		return nil, internal(err)
	}
	return gen.RevokeApiKey200JSONResponse{DoneJSONResponse: revoked()}, nil
}

// ListSigningKeys lists the project's signing keys (GET /v1/signing-keys).
func (k keyManagement) ListSigningKeys(ctx context.Context, _ gen.ListSigningKeysRequestObject) (gen.ListSigningKeysResponseObject, error) {
	keys, err := k.SigningKeys.List(ctx, projectOf(ctx))
	if err != nil {
		return nil, internal(err)
	}
	return gen.ListSigningKeys200JSONResponse{SigningKeyListJSONResponse: gen.SigningKeyListJSONResponse{
		Body: signingKeyList(keys),
	}}, nil
}

// RotateSigningKey makes a new active signing key (POST
// /v1/signing-keys/rotate); the body, and gracePeriodSecs in it, may be
// left out.
func (k keyManagement) RotateSigningKey(ctx context.Context, req gen.RotateSigningKeyRequestObject) (gen.RotateSigningKeyResponseObject, error) {
	var secs *int
	if req.Body != nil {
		secs = req.Body.GracePeriodSecs
	}
	grace, err := signingkey.Grace(secs)
	if err != nil {
		return nil, invalid(Detail{Field: "gracePeriodSecs", Message: "must be from 3600 (1 hour) to 604800 (7 days)"})
	}
	keys, err := k.SigningKeys.Rotate(ctx, projectOf(ctx), grace)
	switch {
	case errors.Is(err, postgres.ErrNotFound):
		return nil, newError(http.StatusUnauthorized, CodeUnauthorized, "invalid API key: its project no longer exists")
	case err != nil:
		return nil, internal(err)
	}
	return gen.RotateSigningKey201JSONResponse{Body: signingKeyList(keys)}, nil
}

// RevokeSigningKey revokes a retiring signing key (DELETE
// /v1/signing-keys/{id}).
func (k keyManagement) RevokeSigningKey(ctx context.Context, req gen.RevokeSigningKeyRequestObject) (gen.RevokeSigningKeyResponseObject, error) {
	id, err := uuid.Parse(req.Id)
	if err != nil {
		return nil, errSigningKeyNotFound
	}
	err = k.SigningKeys.Revoke(ctx, projectOf(ctx), id)
	switch {
	case errors.Is(err, postgres.ErrNotFound):
		return nil, errSigningKeyNotFound
	case errors.Is(err, signingkey.ErrActive):
		return nil, newError(http.StatusConflict, CodeConflict, signingkey.ErrActive.Error())
	case err != nil:
		return nil, internal(err)
	}
	return gen.RevokeSigningKey200JSONResponse{DoneJSONResponse: revoked()}, nil
}

// revoked is the answer to a revocation: {"data": {}}.
func revoked() gen.DoneJSONResponse {
	return gen.DoneJSONResponse{Body: gen.EmptyResponse{Data: map[string]any{}}}
}

func toAPIKey(k apikey.Info) gen.ApiKey {
	return gen.ApiKey{
		Id:         k.ID,
		Name:       k.Name,
		Prefix:     k.Prefix,
		CreatedAt:  k.CreatedAt.UTC(),
		LastUsedAt: utc(k.LastUsedAt),
		RevokedAt:  utc(k.RevokedAt),
	}
}

func signingKeyList(keys []signingkey.Key) gen.SigningKeyListResponse {
	data := make([]gen.SigningKey, len(keys))
	for i, k := range keys {
		data[i] = gen.SigningKey{
			Id:             k.ID,
			State:          gen.SigningKeyState(k.State),
			Key:            k.Secret,
			StandardSecret: signing.StandardSecret(k.Secret),
			CreatedAt:      k.CreatedAt.UTC(),
			ExpiresAt:      utc(k.ExpiresAt),
		}
	}
	return gen.SigningKeyListResponse{Data: data}
}

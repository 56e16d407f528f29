package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/keycache"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
)

// HeaderAPIKey carries the project's API key on every /v1 request.
const HeaderAPIKey = "X-API-Key"

// authenticate admits requests with a valid API key and records its
// project; everything a handler does is scoped to that project.
func (s *server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		key := req.Header.Get(HeaderAPIKey)
		if key == "" {
			return missingKey(req.Header.Get("Authorization"))
		}
		projectID, err := s.verify(c, key)
		switch {
		case errors.Is(err, apikey.ErrRevoked):
			return newError(http.StatusUnauthorized, CodeUnauthorized, "API key has been revoked")
		case errors.Is(err, apikey.ErrInvalid):
			return newError(http.StatusUnauthorized, CodeUnauthorized, "invalid API key")
		case err != nil:
			return internal(err)
		}
		withProject(c, projectID)
		return next(c)
	}
}

// verify resolves the key, with its project's limits when the verifier
// can read both at once (kept for enforceLimits). A key in the cache is
// not looked up: only its project's rate limit is known then (kept for
// enforceLimits too), and the quota standing is read when the response
// needs it.
func (s *server) verify(c echo.Context, key string) (uuid.UUID, error) {
	ctx := c.Request().Context()
	lv, ok := s.Keys.(LimitsVerifier)
	if !ok || s.Limits.Reader == nil {
		return s.Keys.Verify(ctx, key)
	}
	if e, ok := s.KeyCache.Get(key); ok {
		c.Set(keyRate, quota.RateLimit{PerSecond: e.RatePerSecond, Burst: e.RateBurst})
		return e.ProjectID, nil
	}
	gen := s.KeyCache.Generation()
	id, limits, err := lv.IdentifyWithLimits(ctx, key)
	if err != nil {
		// Refusals are not cached: a key created a moment ago must work.
		return uuid.Nil, err
	}
	c.Set(keyLimits, limits)
	s.KeyCache.Put(key, keycache.Entry{
		KeyID: id.KeyID, ProjectID: id.ProjectID,
		RatePerSecond: limits.RatePerSecond, RateBurst: limits.RateBurst,
	}, gen)
	return id.ProjectID, nil
}

// missingKey explains what to send. Clients written for other APIs often
// send a bearer token; telling them where the key goes saves a support case.
func missingKey(authorization string) *Error {
	scheme, _, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	if strings.EqualFold(scheme, "Bearer") {
		return newError(http.StatusUnauthorized, CodeUnauthorized,
			"Authorization: Bearer is not used: send the API key in the X-API-Key header")
	}
	return newError(http.StatusUnauthorized, CodeUnauthorized, "missing API key: send it in the X-API-Key header")
}

package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/clientaddr"
	"github.com/sundial-run/sundial/services/gateway/internal/keycache"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
)

// HeaderAPIKey carries the project's API key on every /v1 request.
const HeaderAPIKey = "X-API-Key"

// AuthThrottle counts failed authentications per client address
// (auththrottle.Throttle; a nil *auththrottle.Throttle throttles nothing).
type AuthThrottle interface {
	Blocked(addr netip.Addr) (time.Duration, bool)
	Failed(addr netip.Addr)
	// Succeeded records a key that authenticated; Known says whether key
	// did recently, which lets it past a block.
	Succeeded(key string)
	Known(key string) bool
}

// authenticate admits requests with a valid API key and records its
// project; everything a handler does is scoped to that project.
//
// A client address that failed to authenticate too often is refused with
// a 429 before its key is looked up: guessing keys costs the guesser a
// minute per few attempts instead of costing the database a query each.
// A key that authenticated within a day (the throttle's known keys, or
// the cache of valid keys) is looked up even then, so that a valid client
// sharing an address (a NAT, a proxy) with a guesser keeps working: the
// throttle bounds what failures cost, not access. Missing and malformed
// keys are refused without any look-up.
func (s *server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		key := req.Header.Get(HeaderAPIKey)
		addr := clientaddr.Of(req, s.Config.TrustedProxies)
		if wait, blocked := s.AuthThrottle.Blocked(addr); blocked {
			if _, cached := s.KeyCache.Get(key); !cached && !s.AuthThrottle.Known(key) {
				return tooManyFailures(c, wait)
			}
		}
		if key == "" {
			s.AuthThrottle.Failed(addr)
			return missingKey(req.Header.Get("Authorization"))
		}
		projectID, keyID, err := s.verify(c, key)
		switch {
		case errors.Is(err, apikey.ErrRevoked):
			s.AuthThrottle.Failed(addr)
			return newError(http.StatusUnauthorized, CodeUnauthorized, "API key has been revoked")
		case errors.Is(err, apikey.ErrInvalid):
			s.AuthThrottle.Failed(addr)
			return newError(http.StatusUnauthorized, CodeUnauthorized, "invalid API key")
		case err != nil:
			return internal(err)
		}
		withProject(c, projectID, keyID)
		return next(c)
	}
}

// tooManyFailures answers a client address that failed to authenticate
// too often, until its window ends.
func tooManyFailures(c echo.Context, wait time.Duration) *Error {
	secs := int(math.Ceil(wait.Seconds()))
	responseHeaders(c.Request().Context()).Set("Retry-After", strconv.Itoa(secs))
	return newError(http.StatusTooManyRequests, CodeRateLimited, fmt.Sprintf(
		"too many failed authentications from this address; retry after %d seconds", secs))
}

// verify resolves the key to its project and its own id (the nil UUID
// when the verifier tells only the project), with its project's limits
// when the verifier can read both at once (kept for enforceLimits). A key
// in the cache is
// not looked up: only its project's rate limit is known then (kept for
// enforceLimits too), and the quota standing is read when the response
// needs it.
func (s *server) verify(c echo.Context, key string) (uuid.UUID, uuid.UUID, error) {
	ctx := c.Request().Context()
	lv, ok := s.Keys.(LimitsVerifier)
	if !ok || s.Limits.Reader == nil {
		projectID, err := s.Keys.Verify(ctx, key)
		if err == nil {
			s.AuthThrottle.Succeeded(key)
		}
		return projectID, uuid.Nil, err
	}
	if e, ok := s.KeyCache.Get(key); ok {
		c.Set(keyRate, quota.RateLimit{PerSecond: e.RatePerSecond, Burst: e.RateBurst})
		return e.ProjectID, e.KeyID, nil
	}
	gen := s.KeyCache.Generation()
	id, limits, err := lv.IdentifyWithLimits(ctx, key)
	if err != nil {
		// Refusals are not cached: a key created a moment ago must work.
		return uuid.Nil, uuid.Nil, err
	}
	c.Set(keyLimits, limits)
	s.AuthThrottle.Succeeded(key)
	s.KeyCache.Put(key, keycache.Entry{
		KeyID: id.KeyID, ProjectID: id.ProjectID,
		RatePerSecond: limits.RatePerSecond, RateBurst: limits.RateBurst,
	}, gen)
	return id.ProjectID, id.KeyID, nil
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

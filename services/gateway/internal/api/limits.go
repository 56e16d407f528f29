package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/ratelimit"
)

// LimitsReader reads a project's quota standing and the rate limit of its
// API keys (quota.Reader).
type LimitsReader interface {
	Read(ctx context.Context, projectID uuid.UUID) (quota.Limits, error)
}

// RateLimiter admits or refuses a request of one API key (ratelimit.Limiter).
type RateLimiter interface {
	Allow(key string, lim ratelimit.Limit) ratelimit.Decision
}

// LimitsDeps is what enforceLimits needs. With a nil Reader no limit is
// enforced and no quota or rate-limit header is sent, and with a nil Rate
// no rate limit (unit tests of other concerns).
type LimitsDeps struct {
	Reader LimitsReader
	Rate   RateLimiter
}

// limits are the project's limits as authentication read them, or read
// now.
func (s *server) limits(c echo.Context, projectID uuid.UUID) (quota.Limits, error) {
	if l, ok := c.Get(keyLimits).(quota.Limits); ok {
		return l, nil
	}
	return s.Limits.Reader.Read(c.Request().Context(), projectID)
}

// enforceLimits runs after authentication on every operation of the API. It
// takes the project's limits (the plan, the period's usage and the rate
// limit: read with the API key when the verifier can, else one query), puts the quota headers and the RateLimit headers on the
// response, whatever its status, and refuses the request with 429
// rate_limited when the API key's bucket is empty. It runs before the
// handler, so before the quota check of a create and before any write.
// Handlers that count hooks replace the quota headers with the count after
// their own.
func (s *server) enforceLimits(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.Limits.Reader == nil {
			return next(c)
		}
		ctx := c.Request().Context()
		projectID, _ := projectIDOf(c)
		limits, err := s.limits(c, projectID)
		switch {
		case errors.Is(err, postgres.ErrNotFound):
			// The key's project went away since the key was read.
			return newError(http.StatusUnauthorized, CodeUnauthorized, "invalid API key")
		case err != nil:
			return internal(err)
		}
		headers := responseHeaders(ctx)
		limits.Usage.SetHeaders(headers, s.Config.HeaderPrefix)
		if s.Limits.Rate == nil {
			return next(c)
		}
		// The key's visible prefix names its bucket: it is unique, and the
		// request has just been authenticated with that key.
		prefix, _ := apikey.Prefix(c.Request().Header.Get(HeaderAPIKey))
		d := s.Limits.Rate.Allow(prefix, ratelimit.Limit{PerSecond: float64(limits.RatePerSecond), Burst: limits.RateBurst})
		d.SetHeaders(headers)
		if !d.Allowed {
			return newError(http.StatusTooManyRequests, CodeRateLimited,
				fmt.Sprintf("rate limit exceeded: this API key may make %d requests per second, in bursts of up to %d; retry after %s seconds",
					limits.RatePerSecond, limits.RateBurst, headers.Get("Retry-After")))
		}
		return next(c)
	}
}

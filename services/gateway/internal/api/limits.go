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
// limit: read with the API key when the verifier can, else one query), puts
// the quota headers and the RateLimit headers on the response, whatever its
// status, and refuses the request with 429 rate_limited when the API key's
// bucket is empty. It runs before the handler, so before the quota check of
// a create and before any write. Handlers that count hooks replace the
// quota headers with the count after their own.
//
// When the key came from the cache, only the rate limit is known: the
// quota standing is read just before the response is written, and only
// when the handler has not put it there itself, so a create reads nothing
// but its own count.
func (s *server) enforceLimits(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.Limits.Reader == nil {
			return next(c)
		}
		ctx := c.Request().Context()
		projectID, _ := projectIDOf(c)
		headers := responseHeaders(ctx)
		rate, cached := c.Get(keyRate).(quota.RateLimit)
		if cached {
			s.quotaHeadersLater(c, projectID, headers)
		} else {
			limits, err := s.limits(c, projectID)
			switch {
			case errors.Is(err, postgres.ErrNotFound):
				// The key's project went away since the key was read.
				return newError(http.StatusUnauthorized, CodeUnauthorized, "invalid API key")
			case err != nil:
				return internal(err)
			}
			limits.Usage.SetHeaders(headers, s.Config.HeaderPrefix)
			rate = quota.RateLimit{PerSecond: limits.RatePerSecond, Burst: limits.RateBurst}
		}
		if s.Limits.Rate == nil {
			return next(c)
		}
		// The key's visible prefix names its bucket: it is unique, and the
		// request has just been authenticated with that key.
		prefix, _ := apikey.Prefix(c.Request().Header.Get(HeaderAPIKey))
		d := s.Limits.Rate.Allow(prefix, ratelimit.Limit{PerSecond: float64(rate.PerSecond), Burst: rate.Burst})
		d.SetHeaders(headers)
		if !d.Allowed {
			return newError(http.StatusTooManyRequests, CodeRateLimited,
				fmt.Sprintf("rate limit exceeded: this API key may make %d requests per second, in bursts of up to %d; retry after %s seconds",
					rate.PerSecond, rate.Burst, headers.Get("Retry-After")))
		}
		return next(c)
	}
}

// quotaHeadersLater puts the project's quota headers on the response just
// before it is written, unless the handler has set them. A failed read
// leaves them out (the answer itself stands) and is noted in the access
// log.
func (s *server) quotaHeadersLater(c echo.Context, projectID uuid.UUID, headers http.Header) {
	res := c.Response()
	limitHeader := s.Config.HeaderPrefix + "-HookQuota-Limit"
	res.Before(func() {
		if _, set := headers[limitHeader]; set {
			return
		}
		limits, err := s.Limits.Reader.Read(c.Request().Context(), projectID)
		if err != nil {
			c.Set(keyQuotaErr, err)
			return
		}
		limits.Usage.SetHeaders(headers, s.Config.HeaderPrefix)
		applyHeaders(res.Header(), headers)
	})
}

package sundial

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// RetryPolicy bounds the retries of requests that are safe to repeat.
type RetryPolicy struct {
	// MaxAttempts is the most times a request is sent, the first included
	// (default 4; 1 turns retries off).
	MaxAttempts int
	// BaseDelay is the wait before the first retry when the answer gives no
	// Retry-After; it doubles at each retry, with jitter (default 250 ms).
	BaseDelay time.Duration
	// MaxDelay caps a wait: a Retry-After longer than it (a quota exhausted
	// until the month ends, say) is not waited for, and the error is
	// returned at once with its RetryAfter (default 30 s).
	MaxDelay time.Duration
}

// DefaultRetryPolicy is the policy of a client made without
// WithRetryPolicy.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, BaseDelay: 250 * time.Millisecond, MaxDelay: 30 * time.Second}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultRetryPolicy.MaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultRetryPolicy.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultRetryPolicy.MaxDelay
	}
	return p
}

// retryStatus reports whether an answer with this status may succeed if
// the same request is sent again later.
func retryStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// next decides whether the call is sent again after its attempt-th try
// failed with err, and after how long.
func (p RetryPolicy) next(ctx context.Context, cl call, attempt int, err error) (time.Duration, bool) {
	if attempt >= p.MaxAttempts || !cl.retryable() || ctx.Err() != nil {
		return 0, false
	}
	wait := p.backoff(attempt)
	var apiErr *APIError
	var netErr *NetworkError
	switch {
	case errors.As(err, &apiErr):
		// Waiting does not end an exhausted quota within any sensible
		// retry: only the next billing period does.
		if !retryStatus(apiErr.StatusCode) || apiErr.Code == CodeQuotaExhausted {
			return 0, false
		}
		if apiErr.RetryAfter > 0 {
			wait = apiErr.RetryAfter
		}
	case errors.As(err, &netErr):
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return 0, false
		}
	default:
		return 0, false
	}
	if wait > p.MaxDelay {
		return 0, false
	}
	// A wait that outlasts the context would only end in its error: the
	// answer at hand says more.
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return 0, false
	}
	return wait, true
}

// backoff is BaseDelay doubled per retry, capped at MaxDelay, with
// "equal jitter": between half and all of it, so that clients that failed
// together do not come back together.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseDelay << min(attempt-1, 20)
	if d <= 0 || d > p.MaxDelay {
		d = p.MaxDelay
	}
	half := d / 2
	return half + rand.N(half+1)
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP
// date. 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(24*time.Hour/time.Second))) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

package retry_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/retry"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2", 2 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", retry.MinRetryAfter, true},
		{"86400", retry.MaxRetryAfter, true},
		{"99999999999999999999999", retry.MaxRetryAfter, true},
		{"Thu, 26 Nov 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Thu, 26 Nov 2026 11:00:00 GMT", retry.MinRetryAfter, true},
		{"Fri, 27 Nov 2026 12:00:00 GMT", retry.MaxRetryAfter, true},
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
	}
	for _, c := range cases {
		got, ok := retry.ParseRetryAfter(c.in, now)
		require.Equal(t, c.ok, ok, "%q", c.in)
		require.Equal(t, c.want, got, "%q", c.in)
	}
}

func TestRetryAfterStatus(t *testing.T) {
	t.Parallel()
	require.True(t, retry.RetryAfterStatus(429))
	require.True(t, retry.RetryAfterStatus(503))
	require.False(t, retry.RetryAfterStatus(500))
	require.False(t, retry.RetryAfterStatus(200))
}

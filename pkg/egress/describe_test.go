package egress_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
)

// dialFailure dresses err the way net/http and net return a failed dial.
func dialFailure(err error) error {
	return &url.Error{Op: "Post", URL: "https://user:secret@example.com/x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
}

// The cases the services word differently take the Wording's prefixes; the
// others read the same for everyone.
func TestDescribeWording(t *testing.T) {
	t.Parallel()
	prefixed := egress.Wording{RefusedPrefix: "refused: ", ClosedPrefix: "connection error: "}
	cases := []struct {
		err             error
		plain, prefixed string
	}{
		{dialFailure(&egress.RefusedError{Addr: netip.MustParseAddr("127.0.0.1"), Reason: "a loopback address"}),
			"destination 127.0.0.1 is a loopback address", "refused: destination 127.0.0.1 is a loopback address"},
		{&url.Error{Op: "Post", URL: "https://example.com/x", Err: io.ErrUnexpectedEOF},
			"the server closed the connection without an answer", "connection error: the server closed the connection without an answer"},
		{dialFailure(context.DeadlineExceeded), "timeout after 1m30s", "timeout after 1m30s"},
		{dialFailure(&net.DNSError{Err: "no such host", Name: "nope.example", IsNotFound: true}),
			"DNS: no such host nope.example", "DNS: no such host nope.example"},
		{dialFailure(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "connection refused", "connection refused"},
		{dialFailure(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), "connection error: no route to host", "connection error: no route to host"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.plain, egress.Wording{}.Describe(tc.err, 90*time.Second), tc.err.Error())
		require.Equal(t, tc.prefixed, prefixed.Describe(tc.err, 90*time.Second), tc.err.Error())
	}
}

func TestDescribeNeverNamesTheURL(t *testing.T) {
	t.Parallel()
	dial := dialFailure(os.NewSyscallError("connect", syscall.ENETUNREACH))
	require.NotContains(t, egress.Wording{}.Describe(dial, time.Second), "secret")
	huge := &url.Error{Op: "Post", URL: "https://example.com/x", Err: &net.OpError{Op: "read", Err: errors.New(strings.Repeat("é", 300))}}
	require.LessOrEqual(t, len(egress.Wording{}.Describe(huge, time.Second)), len("connection error: ")+egress.MaxReason+len("..."))
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		10 * time.Second:        "10s",
		300 * time.Millisecond:  "300ms",
		1500 * time.Millisecond: "1.5s",
		90 * time.Second:        "1m30s",
		2 * time.Minute:         "2m",
		time.Hour:               "1h",
	} {
		require.Equal(t, want, egress.FormatDuration(d))
	}
}

func TestUserAgent(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Sundial/1.2.3 (+https://github.com/sundial-run/sundial)", egress.UserAgent("1.2.3"))
}

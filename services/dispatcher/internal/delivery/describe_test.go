package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// wrap dresses err the way net/http and net return it.
func wrap(err error) error {
	return &url.Error{Op: "Post", URL: "https://example.com/x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want string
	}{
		{wrap(&egress.RefusedError{Addr: netip.MustParseAddr("10.0.0.1"), Reason: "a private address"}),
			"refused: destination 10.0.0.1 is a private address"},
		{wrap(context.DeadlineExceeded), "timeout after 10s"},
		{wrap(&net.DNSError{Err: "no such host", Name: "nope.example", IsNotFound: true}), "DNS: no such host nope.example"},
		{wrap(&net.DNSError{Err: "server misbehaving", Name: "x.example"}), "DNS: server misbehaving looking up x.example"},
		{wrap(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "connection refused"},
		{wrap(os.NewSyscallError("read", syscall.ECONNRESET)), "connection error: connection reset by peer"},
		{wrap(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), "connection error: no route to host"},
		{&url.Error{Op: "Post", URL: "https://example.com/x", Err: io.EOF}, "connection error: the server closed the connection without an answer"},
		{&url.Error{Op: "Post", URL: "https://example.com/x", Err: &net.OpError{Op: "remote error", Err: errors.New("tls: handshake failure")}},
			"TLS: remote error: handshake failure"},
		{&url.Error{Op: "Post", URL: "https://example.com/x", Err: fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", errors.New("malformed HTTP response"))},
			"connection error: net/http: HTTP/1.x transport connection broken: malformed HTTP response"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, delivery.Describe(tc.err, 10*time.Second), tc.err.Error())
	}
}

package delivery_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// trap is a TCP listener that counts the connections it accepts: a
// refused delivery must never reach it.
type trap struct {
	port     string
	accepted atomic.Int64
}

func listenTrap(t *testing.T, network, address string) *trap {
	t.Helper()
	l, err := net.Listen(network, address)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	tr := &trap{port: port}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			tr.accepted.Add(1)
			_ = c.Close()
		}
	}()
	return tr
}

// startDNS runs a DNS server on 127.0.0.1 (UDP) that answers every A
// question with 127.0.0.1 and every other question with no record: the
// "rebinding" name of the tests. It returns the server's address.
func startDNS(t *testing.T) string {
	t.Helper()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			if answer := dnsAnswer(buf[:n]); answer != nil {
				_, _ = conn.WriteTo(answer, from)
			}
		}
	}()
	return conn.LocalAddr().String()
}

// dnsAnswer builds the reply to a one-question query (RFC 1035 §4.1), or
// nil for a packet it does not understand.
func dnsAnswer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	end := 12
	for end < len(q) && q[end] != 0 {
		end += int(q[end]) + 1
	}
	end += 5 // the root label, QTYPE and QCLASS
	if end > len(q) {
		return nil
	}
	isA := binary.BigEndian.Uint16(q[end-4:end-2]) == 1
	out := append([]byte(nil), q[:end]...)
	binary.BigEndian.PutUint16(out[2:4], 0x8180) // a response, recursion available, no error
	binary.BigEndian.PutUint16(out[8:10], 0)     // no authority records
	binary.BigEndian.PutUint16(out[10:12], 0)    // no additional records (drops any EDNS OPT)
	if !isA {
		binary.BigEndian.PutUint16(out[6:8], 0)
		return out
	}
	binary.BigEndian.PutUint16(out[6:8], 1)
	// The name is a pointer to the question's; type A, class IN, TTL 60,
	// four bytes of address.
	return append(out, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1)
}

// strictClient is a delivery client as production builds it (no private
// destination allowed) whose names are resolved by the DNS server at dns.
func strictClient(t *testing.T, dns string) *delivery.Client {
	t.Helper()
	resolver := &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp4", dns)
		},
	}
	c, err := delivery.NewClient(delivery.Options{
		Timeout: 5 * time.Second, ExcerptBytes: 1024, HeaderPrefix: "Sundial", UserAgent: userAgent,
		Guard: egress.NewGuard(false, nil), Resolver: resolver,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func TestSendRefusesTheSSRFMatrix(t *testing.T) {
	t.Parallel()
	v4 := listenTrap(t, "tcp4", "127.0.0.1:0")
	v6 := listenTrap(t, "tcp6", "[::1]:0")
	client := strictClient(t, startDNS(t))

	// Every spelling reaches (or would reach) the v4 trap unless noted.
	cases := map[string]struct {
		host string
		trap *trap
		want string
	}{
		"decimal":             {host: "2130706433", want: "invalid URL"},
		"hex":                 {host: "0x7f000001", want: "invalid URL"},
		"octal":               {host: "0177.0.0.1", want: "invalid URL"},
		"short":               {host: "127.1", want: "invalid URL"},
		"zero":                {host: "0", want: "invalid URL"},
		"dotted hex":          {host: "0x7f.0.0.1", want: "invalid URL"},
		"loopback":            {host: "127.0.0.1", want: "refused: destination 127.0.0.1 is a loopback address"},
		"IPv4-mapped":         {host: "[::ffff:127.0.0.1]", want: "refused: destination "},
		"IPv4-compatible":     {host: "[::127.0.0.1]", want: "refused: destination ::7f00:1 is an IPv4-compatible form of 127.0.0.1, a loopback address"},
		"NAT64":               {host: "[64:ff9b::7f00:1]", want: "refused: destination 64:ff9b::7f00:1 is a NAT64 form of 127.0.0.1, a loopback address"},
		"6to4":                {host: "[2002:7f00:1::]", want: "refused: destination 2002:7f00:1:: is a 6to4 form of 127.0.0.1, a loopback address"},
		"Teredo":              {host: "[2001:0:4136:e378:8000:63bf:80ff:fffe]", want: "refused: destination 2001:0:4136:e378:8000:63bf:80ff:fffe is a Teredo form of 127.0.0.1, a loopback address"},
		"unspecified":         {host: "0.0.0.0", want: "refused: destination 0.0.0.0 is an unspecified address"},
		"IPv6 unspecified":    {host: "[::]", trap: v6, want: "refused: destination :: is an unspecified address"},
		"IPv6 loopback":       {host: "[::1]", trap: v6, want: "refused: destination ::1 is a loopback address"},
		"shared":              {host: "100.64.0.1", want: "refused: destination 100.64.0.1 is a shared address (100.64.0.0/10)"},
		"metadata":            {host: "169.254.169.254", want: "refused: destination 169.254.169.254 is a cloud metadata address"},
		"link-local":          {host: "[fe80::1]", trap: v6, want: "refused: destination fe80::1 is a link-local address"},
		"localhost":           {host: "localhost", want: "refused: destination "},
		"DNS name to 127/8":   {host: "rebind.test", want: "refused: destination 127.0.0.1 is a loopback address"},
		"DNS name, FQDN form": {host: "rebind.test.", want: "refused: destination 127.0.0.1 is a loopback address"},
	}
	for name, c := range cases {
		tr := c.trap
		if tr == nil {
			tr = v4
		}
		url := "https://" + c.host + ":" + tr.port + "/hooks/x"
		res, err := client.Send(context.Background(), request(url, "k"))
		require.NoError(t, err, name)
		require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome, name)
		require.True(t, strings.HasPrefix(res.Error, c.want), "%s: %s: got %q, want %q...", name, url, res.Error, c.want)
		require.Zero(t, res.StatusCode, name)
	}
	// Nothing was sent: neither trap saw a connection.
	require.Zero(t, v4.accepted.Load(), "connections to 127.0.0.1:"+v4.port)
	require.Zero(t, v6.accepted.Load(), "connections to [::1]:"+v6.port)
}

// The traps above prove nothing if they could not be reached at all: with
// private destinations allowed, the same client reaches both.
func TestSSRFTrapsAreReachable(t *testing.T) {
	t.Parallel()
	v4 := listenTrap(t, "tcp4", "127.0.0.1:0")
	v6 := listenTrap(t, "tcp6", "[::1]:0")
	for _, tr := range []struct {
		trap *trap
		host string
	}{{v4, "127.0.0.1"}, {v6, "::1"}} {
		conn, err := (&net.Dialer{Control: egress.NewGuard(true, nil).Control}).Dial("tcp", net.JoinHostPort(tr.host, tr.trap.port))
		require.NoError(t, err)
		_ = conn.Close()
		require.Eventually(t, func() bool { return tr.trap.accepted.Load() == 1 }, 5*time.Second, 10*time.Millisecond)
	}
}

func TestStartDNSAnswersLoopback(t *testing.T) {
	t.Parallel()
	dns := startDNS(t)
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp4", dns)
	}}
	addrs, err := r.LookupNetIP(context.Background(), "ip4", "rebind.test")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", addrs[0].String())
	var dnsErr *net.DNSError
	_, err = r.LookupNetIP(context.Background(), "ip6", "rebind.test")
	require.True(t, err == nil || errors.As(err, &dnsErr), "%v", err)
}

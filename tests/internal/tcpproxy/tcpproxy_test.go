package tcpproxy_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/internal/tcpproxy"
)

// echoServer answers each line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// deadAddr is an address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, deadline time.Duration) (string, error) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(deadline)))
	if _, err := c.Write([]byte("hello\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestFreezeHoldsBytesUntilThaw(t *testing.T) {
	t.Parallel()
	p := tcpproxy.New(t, deadAddr(t), echoServer(t))
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)

	line, err := roundTrip(t, c, r, 5*time.Second)
	require.NoError(t, err, "the second backend takes the connection the first refused")
	require.Equal(t, "hello\n", line)

	p.Freeze()
	_, err = roundTrip(t, c, r, 300*time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "a frozen proxy answers nothing: %v", err)

	p.Thaw()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	// The line written while frozen arrives after the thaw, then ours.
	line, err = r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "hello\n", line)
}

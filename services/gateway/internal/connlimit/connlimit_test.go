package connlimit_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/connlimit"
)

// serve runs an HTTP server behind a Limiter of max connections whose
// /slow handler blocks until release is closed.
func serve(t *testing.T, max int, release chan struct{}) (*connlimit.Limiter, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lim := connlimit.New(l, max)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) { <-release })
	// /hijack takes the connection over, as a WebSocket upgrade does, and
	// closes it once release is closed.
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		go func() { <-release; _ = c.Close() }()
	})
	srv := &http.Server{Handler: mux, ConnState: lim.Track, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lim) }()
	t.Cleanup(func() { _ = srv.Close() })
	return lim, l.Addr().String()
}

// keepAlive opens a connection, makes one request on it and leaves it
// idle, as a keep-alive client does.
func keepAlive(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = fmt.Fprintf(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())
	return c
}

func get(addr string) (int, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Get("http://" + addr + "/ok")
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	return res.StatusCode, nil
}

func TestANewcomerEvictsTheConnectionIdleTheLongest(t *testing.T) {
	t.Parallel()
	lim, addr := serve(t, 3, make(chan struct{}))
	// Each connection is seen idle before the next is opened: the server
	// marks a connection idle after the client has read its answer, so
	// under load the first could otherwise be marked idle last.
	idle := func(n int) {
		require.Eventually(t, func() bool { return lim.Stats().Idle == n }, 10*time.Second, time.Millisecond)
	}
	first := keepAlive(t, addr)
	idle(1)
	keepAlive(t, addr)
	idle(2)
	keepAlive(t, addr)
	idle(3)

	status, err := get(addr)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, "served at the cap")
	require.Equal(t, uint64(1), lim.Stats().Evicted)
	// The oldest idle connection was the one closed.
	require.NoError(t, first.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = first.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	require.Eventually(t, func() bool { return lim.Stats().Open <= 3 }, 10*time.Second, time.Millisecond)
}

func TestBusyConnectionsAreNeverEvicted(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	lim, addr := serve(t, 1, release)
	busy, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer busy.Close()
	_, err = fmt.Fprintf(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return lim.Stats().Open == 1 && lim.Stats().Idle == 0 }, 10*time.Second, time.Millisecond)

	_, err = get(addr)
	require.Error(t, err, "every connection is busy: the newcomer is closed")
	require.Equal(t, uint64(1), lim.Stats().Refused)

	close(release)
	res, err := http.ReadResponse(bufio.NewReader(busy), nil)
	require.NoError(t, err, "the busy request completed")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Eventually(t, func() bool {
		s, err := get(addr)
		return err == nil && s == http.StatusOK
	}, 10*time.Second, 10*time.Millisecond, "once idle, the connection makes room")
}

func TestCapFitsUnderTheFileLimit(t *testing.T) {
	t.Parallel()
	got, limit := connlimit.Cap(1 << 40)
	require.Positive(t, limit)
	require.Equal(t, int(float64(limit)*0.75), got)
	got, _ = connlimit.Cap(10)
	require.Equal(t, 10, got)
}

func TestAHijackedConnectionCountsUntilItCloses(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	lim, addr := serve(t, 1, release)
	socket, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer socket.Close()
	_, err = fmt.Fprintf(socket, "GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return lim.Stats().Open == 1 && lim.Stats().Idle == 0 }, 10*time.Second, time.Millisecond)

	_, err = get(addr)
	require.Error(t, err, "the hijacked connection holds the only place: the newcomer is closed")
	require.Equal(t, uint64(1), lim.Stats().Refused)
	require.Equal(t, 1, lim.Stats().Open, "the hijacked connection is still counted")

	close(release)
	require.Eventually(t, func() bool { return lim.Stats().Open == 0 }, 10*time.Second, time.Millisecond,
		"closing the hijacked connection counts it out")
	status, err := get(addr)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
}

package receiver_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/testkit/receiver"
)

func client(t *testing.T, http2 bool) *http.Client {
	t.Helper()
	caPEM, err := receiver.CAPEM()
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: http2}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport}
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// TestOneCATrustsEveryReceiver: two receivers, one CA file, verified TLS.
func TestOneCATrustsEveryReceiver(t *testing.T) {
	t.Parallel()
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	c := client(t, false)
	for range 2 {
		r := receiver.StartT(t, hello, receiver.Options{})
		resp, body := get(t, c, r.URL()+"/x")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "hello", body)
		require.Equal(t, 1, resp.ProtoMajor)
	}
	require.FileExists(t, receiver.CAFile(t))
}

// TestHTTP2 is offered only when asked for.
func TestHTTP2(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	c := client(t, true)
	resp, _ := get(t, c, receiver.StartT(t, ok, receiver.Options{HTTP2: true}).URL())
	require.Equal(t, 2, resp.ProtoMajor)
	resp, _ = get(t, c, receiver.StartT(t, ok, receiver.Options{}).URL())
	require.Equal(t, 1, resp.ProtoMajor)
}

// TestUntrustedClientIsRefused: the certificate is not valid for a client
// without the CA.
func TestUntrustedClientIsRefused(t *testing.T) {
	t.Parallel()
	r := receiver.StartT(t, http.NotFoundHandler(), receiver.Options{})
	_, err := http.Get(r.URL())
	require.Error(t, err)
}

// TestCloseThenShutdown: a test may close its receiver early; the cleanup
// then finds it closed.
func TestCloseThenShutdown(t *testing.T) {
	t.Parallel()
	r := receiver.StartT(t, http.NotFoundHandler(), receiver.Options{})
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	_, err := client(t, false).Get(r.URL())
	require.Error(t, err, "nothing listens any more")
}

// TestLocalhostOnlyWhenAsked: the certificate names localhost only with
// Options.Localhost, so that tests can see a name check fail.
func TestLocalhostOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	c := client(t, false)
	localhost := func(r *receiver.Receiver) string { return strings.Replace(r.URL(), "127.0.0.1", "localhost", 1) }

	_, err := c.Get(localhost(receiver.StartT(t, ok, receiver.Options{})))
	require.ErrorContains(t, err, "not localhost")

	resp, _ := get(t, c, localhost(receiver.StartT(t, ok, receiver.Options{Localhost: true})))
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

package receiver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/signing"
)

const key = "whsec_demo_key"

// records is a slog handler that hands every record to the test.
type records chan slog.Record

func (r records) Enabled(context.Context, slog.Level) bool        { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error { r <- rec; return nil }
func (r records) WithAttrs([]slog.Attr) slog.Handler              { return r }
func (r records) WithGroup(string) slog.Handler                   { return r }

// attrs returns the next record's attributes as strings.
func (r records) next(t *testing.T) map[string]string {
	t.Helper()
	select {
	case rec := <-r:
		out := map[string]string{"msg": rec.Message}
		rec.Attrs(func(a slog.Attr) bool { out[a.Key] = fmt.Sprintf("%s", a.Value.Any()); return true })
		return out
	case <-time.After(10 * time.Second):
		t.Fatal("no log record within 10s")
		return nil
	}
}

type bundle struct {
	recv   *Receiver
	logs   records
	client *http.Client
}

func setup(t *testing.T, prefix string) bundle {
	t.Helper()
	logs := make(records, 16)
	caFile := filepath.Join(t.TempDir(), "data", "ca.pem")
	recv, err := Start(Options{CAFile: caFile, HeaderPrefix: prefix, Log: slog.New(logs)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, recv.Shutdown(context.Background())) })

	caPEM, err := os.ReadFile(caFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM), "the CA file must hold a PEM certificate")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(client.CloseIdleConnections)
	return bundle{recv: recv, logs: logs, client: client}
}

// deliver POSTs body to host+path signed with signKey, as the dispatcher does.
func (b bundle) deliver(t *testing.T, host, prefix, signKey string, body []byte) {
	t.Helper()
	ts := time.Now().Unix()
	req, err := http.NewRequest(http.MethodPost, "https://"+host+"/webhooks/demo?x=1", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(prefix+"-Id", "0193f7a2-0000-7000-8000-000000000001")
	req.Header.Set(prefix+"-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set(prefix+"-Signature", signing.Header([]string{signKey}, ts, body))
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestSignedDeliveryVerifies(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.recv.SetSigningKey(key)
	body := []byte(`{"id":"0193f7a2-0000-7000-8000-000000000001","data":{"hello":"world"}}`)

	b.deliver(t, b.recv.Host(), "Sundial", key, body)

	got := b.logs.next(t)
	require.Equal(t, "valid", got["signature"])
	require.Equal(t, "POST", got["method"])
	require.Equal(t, "/webhooks/demo?x=1", got["path"])
	require.Equal(t, "0193f7a2-0000-7000-8000-000000000001", got["Sundial-Id"])
	require.Equal(t, string(body), got["body"])
}

func TestWrongKeyIsReportedInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.recv.SetSigningKey(key)

	b.deliver(t, b.recv.Host(), "Sundial", "some other key", []byte(`{}`))

	require.Equal(t, "invalid", b.logs.next(t)["signature"])
}

func TestHeaderPrefixAndLocalhostCertificate(t *testing.T) {
	t.Parallel()
	b := setup(t, "Svc")
	b.recv.SetSigningKey(key)
	_, port, err := net.SplitHostPort(b.recv.Host())
	require.NoError(t, err)

	b.deliver(t, net.JoinHostPort("localhost", port), "Svc", key, []byte(`{"a":1}`))

	got := b.logs.next(t)
	require.Equal(t, "valid", got["signature"])
	require.Equal(t, "0193f7a2-0000-7000-8000-000000000001", got["Svc-Id"])
}

func TestUnknownKeyIsUnchecked(t *testing.T) {
	t.Parallel()
	b := setup(t, "")

	b.deliver(t, b.recv.Host(), "Sundial", key, []byte(`{}`))

	require.Equal(t, "unchecked", b.logs.next(t)["signature"])
}

// TestListensOnThePreviousAddressWhenFree: the demo receiver takes the
// address it is given (the previous run's) when it is free, and another
// free port when it is taken, without failing.
func TestListensOnThePreviousAddressWhenFree(t *testing.T) {
	t.Parallel()
	first, err := Start(Options{CAFile: filepath.Join(t.TempDir(), "ca.pem")})
	require.NoError(t, err)
	addr := first.Host()
	require.NoError(t, first.Shutdown(context.Background()))

	again, err := Start(Options{CAFile: filepath.Join(t.TempDir(), "ca.pem"), Addr: addr})
	require.NoError(t, err)
	t.Cleanup(func() { _ = again.Shutdown(context.Background()) })
	require.Equal(t, addr, again.Host())

	other, err := Start(Options{CAFile: filepath.Join(t.TempDir(), "ca.pem"), Addr: addr})
	require.NoError(t, err, "a taken address falls back to a free port")
	t.Cleanup(func() { _ = other.Shutdown(context.Background()) })
	require.NotEqual(t, addr, other.Host())
}

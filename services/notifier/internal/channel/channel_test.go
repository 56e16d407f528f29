package channel_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/notifier/internal/channel"
	"github.com/sundial-run/sundial/services/notifier/internal/message"
	https "github.com/sundial-run/sundial/testkit/receiver"
)

// chatToken is the secret part of the test chat URLs: no error may show it.
const chatToken = "/services/T000/B000/XXXXSECRETTOKEN"

// received is one request a receiver got.
type received struct {
	Header http.Header
	Body   []byte
}

// receiver is an HTTPS server answering with status and recording what it
// got.
type receiver struct {
	srv      *https.Receiver
	got      chan received
	requests atomic.Int64
}

func startReceiver(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{got: make(chan received, 16)}
	rc.srv = https.StartT(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		rc.got <- received{Header: r.Header.Clone(), Body: body}
		handler(w, r)
	}), https.Options{})
	return rc
}

func answer(status int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }
}

// pool trusts the receiver's certificate.
func (rc *receiver) pool(t *testing.T) *x509.CertPool {
	t.Helper()
	p, err := https.CAPool()
	require.NoError(t, err)
	return p
}

func (rc *receiver) next(t *testing.T) received {
	t.Helper()
	select {
	case r := <-rc.got:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the receiver got nothing within 30s")
		return received{}
	}
}

// bundle is what a test works with.
type bundle struct {
	sender *channel.Sender
	msg    message.Message
}

type setupOptions struct {
	roots *x509.CertPool
	guard *egress.Guard
	owner *channelconfig.Email
	// timeout defaults to 10s.
	timeout time.Duration
}

func setup(t *testing.T, o setupOptions) bundle {
	t.Helper()
	if o.guard == nil {
		o.guard = egress.NewGuard(true, nil)
	}
	if o.timeout == 0 {
		o.timeout = 10 * time.Second
	}
	s := channel.New(channel.Options{
		Guard:        o.guard,
		RootCAs:      o.roots,
		Timeout:      o.timeout,
		UserAgent:    "Sundial-Test/1",
		HeaderPrefix: "Sundial",
		OwnerSMTP:    o.owner,
	})
	t.Cleanup(s.Close)
	return bundle{sender: s, msg: testMessage()}
}

func testMessage() message.Message {
	return message.Message{
		GroupID: uuid.New(),
		Kind:    message.KindHookFailed,
		Project: message.Project{ID: uuid.New(), Name: "acme", Domain: "api.acme.com"},
		Alerts: []*eventv1.Alert{{
			AlertId:    "hook.failed:hook-42:1",
			Kind:       eventv1.AlertKind_ALERT_KIND_HOOK_FAILED,
			OccurredAt: timestamppb.Now(),
			HookId:     "hook-42",
			Domain:     "api.acme.com",
			Path:       "/webhooks/x",
			Error:      "HTTP 500",
			Attempts:   3,
		}},
		Total:        1,
		DashboardURL: "https://dash.sundial.test",
		CreatedAt:    time.Now(),
	}
}

func chatTarget(url string) channel.Target {
	raw, _ := json.Marshal(channelconfig.Chat{URL: url})
	return channel.Target{Kind: channelconfig.KindChat, Config: raw}
}

func webhookTarget(url string, keys ...string) channel.Target {
	raw, _ := json.Marshal(channelconfig.Webhook{URL: url})
	return channel.Target{Kind: channelconfig.KindWebhook, Config: raw, SigningKeys: keys}
}

func TestChat(t *testing.T) {
	t.Parallel()
	rc := startReceiver(t, answer(http.StatusOK))
	b := setup(t, setupOptions{roots: rc.pool(t)})

	require.NoError(t, b.sender.Send(context.Background(), chatTarget(rc.srv.URL()+chatToken), b.msg))

	got := rc.next(t)
	require.Equal(t, "application/json", got.Header.Get("Content-Type"))
	require.Equal(t, "Sundial-Test/1", got.Header.Get("User-Agent"))
	var body map[string]string
	require.NoError(t, json.Unmarshal(got.Body, &body))
	require.Contains(t, body["text"], "acme")
	require.Contains(t, body["text"], "api.acme.com/webhooks/x")
	require.Contains(t, body["text"], "<https://dash.sundial.test/p/"+b.msg.Project.ID.String()+"/hooks/hook-42|hook-42>")
	require.Contains(t, body["text"], "HTTP 500")
	require.Contains(t, body["text"], b.msg.GroupID.String())
}

// sign is the documented scheme, written out here rather than taken from
// package signing: "v1," + hex HMAC-SHA256 of "<timestamp>.<body>".
func sign(key, ts string, body []byte) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(ts + "."))
	h.Write(body)
	return "v1," + hex.EncodeToString(h.Sum(nil))
}

func TestWebhookSignedWithEveryKey(t *testing.T) {
	t.Parallel()
	rc := startReceiver(t, answer(http.StatusNoContent))
	b := setup(t, setupOptions{roots: rc.pool(t)})
	const active, retiring = "whsec_active_key", "whsec_retiring_key"
	before := time.Now().Unix()

	require.NoError(t, b.sender.Send(context.Background(), webhookTarget(rc.srv.URL()+"/alerts", active, retiring), b.msg))

	got := rc.next(t)
	require.Equal(t, "application/json", got.Header.Get("Content-Type"))
	require.Equal(t, "Sundial-Test/1", got.Header.Get("User-Agent"))
	require.Equal(t, b.msg.GroupID.String(), got.Header.Get("Sundial-Id"))
	ts := got.Header.Get("Sundial-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, sec, before)
	require.LessOrEqual(t, sec, time.Now().Unix())

	entries := strings.Fields(got.Header.Get("Sundial-Signature"))
	require.Equal(t, []string{sign(active, ts, got.Body), sign(retiring, ts, got.Body)}, entries)
	legacy := hmac.New(sha256.New, []byte(active))
	legacy.Write(got.Body)
	require.Equal(t, hex.EncodeToString(legacy.Sum(nil)), got.Header.Get("X-Sundial-Signature"))

	var doc struct {
		Version int    `json:"version"`
		ID      string `json:"id"`
		Type    string `json:"type"`
		Alerts  []struct {
			HookID string `json:"hookId"`
		} `json:"alerts"`
	}
	require.NoError(t, json.Unmarshal(got.Body, &doc))
	require.Equal(t, 1, doc.Version)
	require.Equal(t, b.msg.GroupID.String(), doc.ID)
	require.Equal(t, message.KindHookFailed, doc.Type)
	require.Len(t, doc.Alerts, 1)
	require.Equal(t, "hook-42", doc.Alerts[0].HookID)
}

func TestWebhookWithoutKeyFails(t *testing.T) {
	t.Parallel()
	rc := startReceiver(t, answer(http.StatusOK))
	b := setup(t, setupOptions{roots: rc.pool(t)})
	err := b.sender.Send(context.Background(), webhookTarget(rc.srv.URL()+"/alerts"), b.msg)
	require.EqualError(t, err, "the project has no signing key")
	require.Zero(t, rc.requests.Load())
}

func TestHTTPFailures(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		handler func(http.ResponseWriter, *http.Request)
		want    string
	}{
		"500": {answer(http.StatusInternalServerError), "HTTP 500 from https://127.0.0.1:"},
		"404 with a reason": {
			func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNotFound)
				// A receiver echoing the URL must not leak its token.
				_, _ = io.WriteString(w, "no_service for "+r.URL.Path+"\nmore")
			},
			"/…: no_service for … more",
		},
		"redirect": {
			func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			},
			"HTTP 302 from https://127.0.0.1:",
		},
	} {
		for _, kind := range []string{channelconfig.KindChat, channelconfig.KindWebhook} {
			t.Run(name+" "+kind, func(t *testing.T) {
				t.Parallel()
				rc := startReceiver(t, tc.handler)
				b := setup(t, setupOptions{roots: rc.pool(t)})
				target := chatTarget(rc.srv.URL() + chatToken)
				if kind == channelconfig.KindWebhook {
					target = webhookTarget(rc.srv.URL()+chatToken, "key")
				}

				err := b.sender.Send(context.Background(), target, b.msg)

				require.Error(t, err)
				require.Contains(t, err.Error(), tc.want)
				require.NotContains(t, err.Error(), "SECRETTOKEN")
				require.NotContains(t, err.Error(), "/services/")
				// A redirect is not followed: one request only.
				rc.next(t)
				require.EqualValues(t, 1, rc.requests.Load())
			})
		}
	}
}

func TestGuardRefusesLoopback(t *testing.T) {
	t.Parallel()
	rc := startReceiver(t, answer(http.StatusOK))
	b := setup(t, setupOptions{roots: rc.pool(t), guard: egress.NewGuard(false, nil)})

	for _, target := range []channel.Target{chatTarget(rc.srv.URL() + chatToken), webhookTarget(rc.srv.URL()+"/x", "key")} {
		err := b.sender.Send(context.Background(), target, b.msg)
		require.EqualError(t, err, "destination 127.0.0.1 is a loopback address")
	}
	require.Zero(t, rc.requests.Load())
}

func TestGuardAllowsListedNetwork(t *testing.T) {
	t.Parallel()
	rc := startReceiver(t, answer(http.StatusOK))
	guard := egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	b := setup(t, setupOptions{roots: rc.pool(t), guard: guard})
	require.NoError(t, b.sender.Send(context.Background(), chatTarget(rc.srv.URL()+chatToken), b.msg))
	require.EqualValues(t, 1, rc.requests.Load())
}

func TestUnknownAuthority(t *testing.T) {
	t.Parallel()
	rc := startReceiver(t, answer(http.StatusOK))
	b := setup(t, setupOptions{roots: x509.NewCertPool()})
	err := b.sender.Send(context.Background(), chatTarget(rc.srv.URL()+chatToken), b.msg)
	require.EqualError(t, err, "TLS: certificate signed by unknown authority")
	require.Zero(t, rc.requests.Load())
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rc := startReceiver(t, func(http.ResponseWriter, *http.Request) { <-release })
	// Unblock the handler before the server's Close waits for it.
	t.Cleanup(func() { close(release) })
	b := setup(t, setupOptions{roots: rc.pool(t), timeout: 300 * time.Millisecond})

	err := b.sender.Send(context.Background(), chatTarget(rc.srv.URL()+chatToken), b.msg)

	require.EqualError(t, err, "timeout after 300ms")
}

func TestStoppedSendIsNotAFailure(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rc := startReceiver(t, func(http.ResponseWriter, *http.Request) { <-release })
	t.Cleanup(func() { close(release) })
	b := setup(t, setupOptions{roots: rc.pool(t)})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-rc.got // the request arrived: stop as a SIGTERM would
		cancel()
	}()

	err := b.sender.Send(ctx, chatTarget(rc.srv.URL()+chatToken), b.msg)

	require.ErrorIs(t, err, context.Canceled)
	require.NotContains(t, err.Error(), "SECRETTOKEN")
	require.NotContains(t, err.Error(), "/services/")
}

func TestInvalidConfig(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{})
	err := b.sender.Send(context.Background(), chatTarget("http://hooks.example.com"+chatToken), b.msg)
	require.EqualError(t, err, "invalid channel config: url: must use https")
	err = b.sender.Send(context.Background(), channel.Target{Kind: "pager"}, b.msg)
	require.EqualError(t, err, `unknown channel type "pager"`)
}

package sundial

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const deliveryBody = `{"id":"0190b1c2-0000-7000-8000-000000000001","path":"/orders","postAt":"2030-01-01T00:00:00Z","postedAt":"2030-01-01T00:00:01Z","data":{"order":42},"createdAt":"2029-12-31T00:00:00Z","updatedAt":"2029-12-31T00:00:00Z"}`

// receiver is a handler under test with what its function got.
type receiver struct {
	handler http.Handler
	result  Result

	mu  sync.Mutex
	got []*Delivery
}

func setupReceiver(t *testing.T, result Result, opts ...VerifyOption) *receiver {
	t.Helper()
	r := &receiver{result: result}
	r.handler = NewHandler([]string{"retiring-key", "active-key"}, func(ctx context.Context, d *Delivery) Result {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, d)
		return r.result
	}, opts...)
	return r
}

// deliver posts body with header and returns the answer.
func (r *receiver) deliver(body string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	r.handler.ServeHTTP(w, req)
	return w
}

func (r *receiver) deliveries() []*Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Delivery(nil), r.got...)
}

func signedNow(body string, keys ...string) http.Header {
	h := sign([]byte(body), time.Now().Unix(), keys...)
	// As the dispatcher spells them (not canonicalised).
	h["Sundial-Ack-URL"] = []string{"https://sundial.example.com/v1/async/id/1/tok/ack"}
	h["Sundial-Nack-URL"] = []string{"https://sundial.example.com/v1/async/id/1/tok/nack"}
	return h
}

func TestHandlerAck(t *testing.T) {
	t.Parallel()
	r := setupReceiver(t, Ack())
	w := r.deliver(deliveryBody, signedNow(deliveryBody, "active-key", "old-key"))
	require.Equal(t, http.StatusOK, w.Code, "answer %s", w.Body)
	got := r.deliveries()
	require.Len(t, got, 1, "deliveries")
	d := got[0]
	require.Equal(t, "0190b1c2-0000-7000-8000-000000000001", d.ID, "delivery %+v", d)
	require.Equal(t, "/orders", d.Path, "delivery %+v", d)
	require.Equal(t, `{"order":42}`, string(d.Data), "delivery %+v", d)
	require.True(t, d.PostedAt.Equal(time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC)), "postedAt %s", d.PostedAt)
	require.Equal(t, deliveryBody, string(d.Body), "the body as received")
	require.Equal(t, "https://sundial.example.com/v1/async/id/1/tok/ack", d.AckURL, "ack URL")
	require.True(t, strings.HasSuffix(d.NackURL, "/nack"), "nack URL %q", d.NackURL)
}

func TestHandlerAccept(t *testing.T) {
	t.Parallel()
	for timeout, want := range map[time.Duration]string{
		90 * time.Second: "90", 1500 * time.Millisecond: "2", 48 * time.Hour: "86400", 0: "",
	} {
		r := setupReceiver(t, Accept(timeout))
		w := r.deliver(deliveryBody, signedNow(deliveryBody, "active-key"))
		require.Equal(t, http.StatusAccepted, w.Code, "Accept(%s): answer %s", timeout, w.Body)
		require.Equal(t, want, w.Header().Get("Sundial-Async-Timeout"), "Accept(%s): Sundial-Async-Timeout", timeout)
	}
	r := setupReceiver(t, Accept(time.Minute), WithHeaderPrefix("Acme"))
	h := signedNow(deliveryBody, "active-key")
	h["Acme-Timestamp"], h["Acme-Signature"] = h["Sundial-Timestamp"], h["Sundial-Signature"]
	delete(h, "Sundial-Signature")
	w := r.deliver(deliveryBody, h)
	require.Equal(t, http.StatusAccepted, w.Code, "prefix Acme: answer %s", w.Body)
	require.Equal(t, "60", w.Header().Get("Acme-Async-Timeout"), "prefix Acme: header %v", w.Header())
}

func TestHandlerNack(t *testing.T) {
	t.Parallel()
	r := setupReceiver(t, Nack(errors.New("warehouse offline")))
	w := r.deliver(deliveryBody, signedNow(deliveryBody, "active-key"))
	require.Equal(t, http.StatusInternalServerError, w.Code, "answer %s", w.Body)
	require.Contains(t, w.Body.String(), "warehouse offline", "the reason goes back in the answer")
}

func TestHandlerRefusesBadDeliveries(t *testing.T) {
	t.Parallel()
	stale := sign([]byte(deliveryBody), time.Now().Add(-time.Hour).Unix(), "active-key")
	cases := map[string]struct {
		body   string
		header http.Header
		want   int
	}{
		"unsigned":         {deliveryBody, http.Header{}, http.StatusUnauthorized},
		"wrong key":        {deliveryBody, signedNow(deliveryBody, "someone-else"), http.StatusUnauthorized},
		"altered body":     {deliveryBody, signedNow(strings.Replace(deliveryBody, "42", "43", 1), "active-key"), http.StatusUnauthorized},
		"replayed":         {deliveryBody, stale, http.StatusUnauthorized},
		"signed, not JSON": {"nope", signedNow("nope", "active-key"), http.StatusBadRequest},
	}
	for name, c := range cases {
		r := setupReceiver(t, Ack())
		w := r.deliver(c.body, c.header)
		require.Equal(t, c.want, w.Code, "%s: answer %s", name, w.Body)
		require.Empty(t, r.deliveries(), "%s: the function was called", name)
	}
}

func TestHandlerBoundsTheBody(t *testing.T) {
	t.Parallel()
	r := setupReceiver(t, Ack(), WithMaxBodyBytes(100))
	big := `{"data":"` + strings.Repeat("x", 200) + `"}`
	w := r.deliver(big, signedNow(big, "active-key"))
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, "answer %s", w.Body)
	require.Empty(t, r.deliveries(), "the function was called")
}

func TestHandlerRefusesOtherMethods(t *testing.T) {
	t.Parallel()
	r := setupReceiver(t, Ack())
	w := httptest.NewRecorder()
	r.handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hooks", nil))
	require.Equal(t, http.StatusMethodNotAllowed, w.Code, "answer to a GET")
}

func TestParseAlert(t *testing.T) {
	t.Parallel()
	body := `{"version":1,"id":"0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f","type":"hook.failed","createdAt":"2030-01-02T15:04:05Z","project":{"id":"p","name":"Acme"},"total":1,"dashboardUrl":"https://d","alerts":[{"id":"hook.failed:h:6","occurredAt":"2030-01-02T15:02:05Z","hookId":"h","attempts":6}]}`
	req := httptest.NewRequest(http.MethodPost, "/alerts", strings.NewReader(body))
	for k, v := range signedNow(body, "active-key") {
		req.Header[k] = v
	}
	n, err := ParseAlert(req, []string{"active-key"})
	require.NoError(t, err)
	require.Equal(t, "hook.failed", n.Type, "%+v", n)
	require.Equal(t, "Acme", n.Project.Name, "%+v", n)
	require.Len(t, n.Alerts, 1, "%+v", n)
	require.Equal(t, 6, n.Alerts[0].Attempts, "%+v", n)
}

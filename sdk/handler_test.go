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
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	got := r.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries", len(got))
	}
	d := got[0]
	if d.ID != "0190b1c2-0000-7000-8000-000000000001" || d.Path != "/orders" || string(d.Data) != `{"order":42}` ||
		!d.PostedAt.Equal(time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC)) || string(d.Body) != deliveryBody {
		t.Fatalf("delivery %+v", d)
	}
	if d.AckURL != "https://sundial.example.com/v1/async/id/1/tok/ack" || !strings.HasSuffix(d.NackURL, "/nack") {
		t.Fatalf("async URLs %q %q", d.AckURL, d.NackURL)
	}
}

func TestHandlerAccept(t *testing.T) {
	t.Parallel()
	for timeout, want := range map[time.Duration]string{
		90 * time.Second: "90", 1500 * time.Millisecond: "2", 48 * time.Hour: "86400", 0: "",
	} {
		r := setupReceiver(t, Accept(timeout))
		w := r.deliver(deliveryBody, signedNow(deliveryBody, "active-key"))
		if w.Code != http.StatusAccepted || w.Header().Get("Sundial-Async-Timeout") != want {
			t.Errorf("Accept(%s): %d, timeout %q, want %q", timeout, w.Code, w.Header().Get("Sundial-Async-Timeout"), want)
		}
	}
	r := setupReceiver(t, Accept(time.Minute), WithHeaderPrefix("Acme"))
	h := signedNow(deliveryBody, "active-key")
	h["Acme-Timestamp"], h["Acme-Signature"] = h["Sundial-Timestamp"], h["Sundial-Signature"]
	delete(h, "Sundial-Signature")
	w := r.deliver(deliveryBody, h)
	if w.Code != http.StatusAccepted || w.Header().Get("Acme-Async-Timeout") != "60" {
		t.Fatalf("prefix Acme: %d %v", w.Code, w.Header())
	}
}

func TestHandlerNack(t *testing.T) {
	t.Parallel()
	r := setupReceiver(t, Nack(errors.New("warehouse offline")))
	w := r.deliver(deliveryBody, signedNow(deliveryBody, "active-key"))
	if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "warehouse offline") {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
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
		if w := r.deliver(c.body, c.header); w.Code != c.want {
			t.Errorf("%s: %d, want %d", name, w.Code, c.want)
		}
		if n := len(r.deliveries()); n != 0 {
			t.Errorf("%s: the function was called", name)
		}
	}
}

func TestHandlerBoundsTheBody(t *testing.T) {
	t.Parallel()
	r := setupReceiver(t, Ack(), WithMaxBodyBytes(100))
	big := `{"data":"` + strings.Repeat("x", 200) + `"}`
	if w := r.deliver(big, signedNow(big, "active-key")); w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d", w.Code)
	}
	if len(r.deliveries()) != 0 {
		t.Fatal("the function was called")
	}
}

func TestHandlerRefusesOtherMethods(t *testing.T) {
	t.Parallel()
	r := setupReceiver(t, Ack())
	w := httptest.NewRecorder()
	r.handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hooks", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("status %d", w.Code)
	}
}

func TestParseAlert(t *testing.T) {
	t.Parallel()
	body := `{"version":1,"id":"0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f","type":"hook.failed","createdAt":"2030-01-02T15:04:05Z","project":{"id":"p","name":"Acme"},"total":1,"dashboardUrl":"https://d","alerts":[{"id":"hook.failed:h:6","occurredAt":"2030-01-02T15:02:05Z","hookId":"h","attempts":6}]}`
	req := httptest.NewRequest(http.MethodPost, "/alerts", strings.NewReader(body))
	for k, v := range signedNow(body, "active-key") {
		req.Header[k] = v
	}
	n, err := ParseAlert(req, []string{"active-key"})
	if err != nil {
		t.Fatal(err)
	}
	if n.Type != "hook.failed" || n.Project.Name != "Acme" || len(n.Alerts) != 1 || n.Alerts[0].Attempts != 6 {
		t.Fatalf("%+v", n)
	}
}

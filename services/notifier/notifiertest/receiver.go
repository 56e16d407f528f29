package notifiertest

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sundial-run/sundial/testkit/receiver"
)

// Request is one request a Receiver got.
type Request struct {
	At     time.Time
	Path   string
	Header http.Header
	Body   []byte
	// Text is the chat message's "text", if the body has one.
	Text string
}

// Receiver is a TLS chat (or webhook) receiver: it records every request
// and answers with the status the test sets (200 by default). It can hold
// requests until the test releases them.
type Receiver struct {
	srv *receiver.Receiver
	// CAFile is a PEM file of the receiver's certificate, for
	// SUNDIAL_DELIVERY_CA_FILE.
	CAFile string

	mu       sync.Mutex
	status   int
	hold     chan struct{} // non-nil: requests wait for it to close
	requests []Request
	arrived  chan struct{}
}

// NewReceiver starts a Receiver for the test's lifetime.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{status: http.StatusOK, arrived: make(chan struct{}, 1000)}
	r.srv = receiver.StartT(t, http.HandlerFunc(r.serve), receiver.Options{})
	// Shutting down waits for running handlers: release the held ones first.
	t.Cleanup(r.Release)
	r.CAFile = receiver.CAFile(t)
	return r
}

// URL is a chat incoming-webhook URL on the receiver, with a secret token.
func (r *Receiver) URL() string { return r.srv.URL() + "/services/T000/B000/secret-token" }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var chat struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(body, &chat)
	r.mu.Lock()
	r.requests = append(r.requests, Request{At: time.Now(), Path: req.URL.Path, Header: req.Header.Clone(), Body: body, Text: chat.Text})
	status, hold := r.status, r.hold
	r.mu.Unlock()
	select {
	case r.arrived <- struct{}{}:
	default:
	}
	if hold != nil {
		<-hold
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, "ok")
}

// SetStatus makes the receiver answer with status from now on.
func (r *Receiver) SetStatus(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

// Hold makes the next requests wait until Release.
func (r *Receiver) Hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold == nil {
		r.hold = make(chan struct{})
	}
}

// Release lets held requests answer, and stops holding.
func (r *Receiver) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold != nil {
		close(r.hold)
		r.hold = nil
	}
}

// Requests returns a copy of every request so far.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// Wait waits until at least n requests arrived and returns them all.
func (r *Receiver) Wait(t testing.TB, n int, timeout time.Duration) []Request {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if got := r.Requests(); len(got) >= n {
			return got
		}
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("the receiver got %d requests, want %d: %+v", len(r.Requests()), n, r.Requests())
		}
	}
}

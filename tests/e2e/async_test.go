package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	https "github.com/sundial-run/sundial/testkit/receiver"
)

// asyncReceiver is an HTTPS endpoint whose answers a test decides: answer
// gets the delivery's number (from 1) and writes the response.
type asyncReceiver struct {
	srv    *https.Receiver
	answer func(n int, w http.ResponseWriter, r *http.Request)

	mu  sync.Mutex
	got []received
}

func newAsyncReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *asyncReceiver {
	t.Helper()
	r := &asyncReceiver{answer: answer}
	// One CA signs every test receiver's certificate, and the suite's
	// SUNDIAL_DELIVERY_CA_FILE already trusts it.
	r.srv = https.StartT(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{Header: req.Header.Clone(), Body: body, At: time.Now()})
		n := len(r.got)
		r.mu.Unlock()
		r.answer(n, w, req)
	}), https.Options{})
	return r
}

func (r *asyncReceiver) Received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// asyncSetup boots the suite with its project's deliveries going to a
// receiver that answers as told, the dispatcher building the ack and nack
// URLs on the gateway's real address, and a quick async sweep.
func asyncSetup(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) (*bundle, *asyncReceiver) {
	t.Helper()
	b := setup(t, options{without: map[string]bool{"scheduler": true, "dispatcher": true}})
	rcv := newAsyncReceiver(t, answer)
	resp, raw := b.do(t, http.MethodPatch, "/v1/project", map[string]any{"domain": rcv.srv.Addr()})
	require.Equal(t, http.StatusOK, resp.StatusCode, "PATCH /v1/project: %s", raw)
	b.env["SUNDIAL_PUBLIC_URL"] = b.baseURL
	b.env["SUNDIAL_SCHEDULER_ASYNC_SWEEP_INTERVAL"] = "100ms"
	// These tests count deliveries exactly: the suite's 2 s lease would let
	// a loaded machine, slow to apply a 202, deliver the hook again.
	b.env["SUNDIAL_LEASE_DURATION"] = "30s"
	b.start(t, "scheduler")
	b.start(t, "dispatcher")
	return b, rcv
}

// answerURL POSTs body to an ack or nack URL as a receiver does, without an
// API key, through the suite's contract-checking client, and returns the
// status and the body of the answer.
func (b *bundle) answerURL(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(bytes.TrimSpace(raw))
}

func (b *bundle) scheduleNow(t *testing.T, path string, retry map[string]any) hook {
	t.Helper()
	req := map[string]any{"path": path, "postAt": time.Now().UTC().Format(time.RFC3339), "data": map[string]any{"job": path}}
	if retry != nil {
		req["retryOverride"] = retry
	}
	return b.schedule(t, req)
}

// waitFor waits until the hook matches, and returns it.
func (b *bundle) waitFor(t *testing.T, id string, what string, ok func(hook) bool) hook {
	t.Helper()
	var last hook
	require.Eventually(t, func() bool {
		last = b.get(t, id)
		return ok(last)
	}, 30*time.Second, 50*time.Millisecond, "hook %s never got %s; last %+v", id, what, last)
	return last
}

// attempt is the API's view of an attempt, as far as these tests look.
type attempt struct {
	Attempt    int    `json:"attempt"`
	Outcome    string `json:"outcome"`
	StatusCode int    `json:"statusCode"`
	Error      string `json:"error"`
	Async      *struct {
		State       string `json:"state"`
		TimeoutSecs int    `json:"timeoutSecs"`
	} `json:"async"`
	AckBody json.RawMessage `json:"ackBody"`
}

func (b *bundle) attempts(t *testing.T, id string) []attempt {
	t.Helper()
	resp, raw := b.do(t, http.MethodGet, "/v1/hooks/"+id+"/attempts", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/hooks/%s/attempts: %s", id, raw)
	var out struct{ Data []attempt }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

func accepted(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }

func TestAsyncAckCompletesTheHook(t *testing.T) {
	t.Parallel()
	b, rcv := asyncSetup(t, accepted)
	h := b.scheduleNow(t, "/async/ack", nil)

	// The 202 is applied: the hook waits, pending, its delivery counted.
	waiting := b.waitFor(t, h.ID, "its 202 applied", func(h hook) bool { return h.Attempts == 1 })
	require.Equal(t, "pending", waiting.Status)
	got := rcv.Received()
	require.Len(t, got, 1)
	ackURL, nackURL := got[0].Header.Get("Sundial-Ack-URL"), got[0].Header.Get("Sundial-Nack-URL")
	require.True(t, strings.HasPrefix(ackURL, b.baseURL+"/v1/async/"+h.ID+"/"), ackURL)
	require.True(t, strings.HasSuffix(nackURL, "/nack"), nackURL)

	tries := b.attempts(t, h.ID)
	require.Len(t, tries, 1)
	require.Equal(t, "async", tries[0].Outcome)
	require.Equal(t, http.StatusAccepted, tries[0].StatusCode)
	require.Equal(t, "waiting", tries[0].Async.State)
	require.Equal(t, 300, tries[0].Async.TimeoutSecs, "the project's default")

	// The gateway records the ack; the scheduler completes the hook.
	status, body := b.answerURL(t, ackURL, `{"report": "done", "rows": 3}`)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"data": {"status": "completed"}}`, body)

	done := b.waitStatus(t, h.ID, "completed", 10*time.Second)
	require.Equal(t, 1, done.Attempts)
	require.Empty(t, done.FailureError)
	tries = b.attempts(t, h.ID)
	require.Len(t, tries, 1)
	require.Equal(t, "success", tries[0].Outcome)
	require.Equal(t, "acked", tries[0].Async.State)
	require.JSONEq(t, `{"report": "done", "rows": 3}`, string(tries[0].AckBody))
	// The ack is final: the nack URL of the same delivery changes nothing.
	status, body = b.answerURL(t, nackURL, ``)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"data": {"status": "completed"}}`, body)
	require.Equal(t, "completed", b.get(t, h.ID).Status)
	require.Len(t, rcv.Received(), 1, "delivered once")
}

// TestAsyncAckBeforeTheAnswer: the receiver acks inside its handler, before
// it answers 202. The gateway records it and the scheduler completes the
// hook; the 202, arriving after, changes nothing.
func TestAsyncAckBeforeTheAnswer(t *testing.T) {
	t.Parallel()
	// The handler hands the ack URL to the test and answers 202 only once
	// the test has acked.
	ackURLs, ackedFirst := make(chan string, 1), make(chan struct{})
	b, rcv := asyncSetup(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		ackURLs <- r.Header.Get("Sundial-Ack-URL")
		<-ackedFirst
		w.WriteHeader(http.StatusAccepted)
	})
	var once sync.Once
	release := func() { once.Do(func() { close(ackedFirst) }) }
	t.Cleanup(release) // a failed test must not leave the handler waiting
	h := b.scheduleNow(t, "/async/early", nil)
	select {
	case url := <-ackURLs:
		status, body := b.answerURL(t, url, `{"early": true}`)
		release()
		require.Equal(t, http.StatusOK, status)
		require.JSONEq(t, `{"data": {"status": "completed"}}`, body)
	case <-time.After(30 * time.Second):
		t.Fatal("never delivered")
	}
	done := b.waitStatus(t, h.ID, "completed", 10*time.Second)
	require.Equal(t, 1, done.Attempts)

	// The dispatcher's 202 result reaches the scheduler, which takes it off
	// the work queue having found it stale: the hook stays as the ack left it.
	_, js := b.nats.Connect(t)
	require.Eventually(t, func() bool {
		stream, err := js.Stream(t.Context(), event.StreamResults)
		if err != nil {
			return false
		}
		info, err := stream.Info(t.Context())
		return err == nil && info.State.LastSeq >= 1 && info.State.Msgs == 0
	}, 20*time.Second, 50*time.Millisecond, "the 202 result was never consumed")
	after := b.get(t, h.ID)
	require.Equal(t, "completed", after.Status)
	require.Equal(t, 1, after.Attempts)
	require.Equal(t, done.UpdatedAt, after.UpdatedAt, "the stale result changed nothing")
	require.Len(t, rcv.Received(), 1, "delivered once")
}

func TestAsyncNackRetriesThenCompletes(t *testing.T) {
	t.Parallel()
	nacks := make(chan string, 1)
	b, rcv := asyncSetup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			nacks <- r.Header.Get("Sundial-Nack-URL")
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	// The shortest retry the API allows, without jitter.
	h := b.scheduleNow(t, "/async/nack", map[string]any{"minRetries": 1, "delaySecs": 5, "strategy": "fixed"})
	var nackURL string
	select {
	case nackURL = <-nacks:
	case <-time.After(30 * time.Second):
		t.Fatal("never delivered")
	}
	status, body := b.answerURL(t, nackURL, `{"error": "disk full"}`)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"data": {"status": "nacked"}}`, body)

	retrying := b.waitStatus(t, h.ID, "retry", 10*time.Second)
	require.Equal(t, 1, retrying.Attempts)
	require.Equal(t, "nacked by receiver", retrying.FailureError)

	done := b.waitStatus(t, h.ID, "completed", 20*time.Second)
	require.Equal(t, 2, done.Attempts)
	require.Len(t, rcv.Received(), 2)
	tries := b.attempts(t, h.ID)
	require.Len(t, tries, 2)
	require.Equal(t, "failure", tries[0].Outcome)
	require.Equal(t, "nacked by receiver", tries[0].Error)
	require.Equal(t, "nacked", tries[0].Async.State)
	require.JSONEq(t, `{"error": "disk full"}`, string(tries[0].AckBody))
	require.Equal(t, "success", tries[1].Outcome)
	require.Nil(t, tries[1].Async, "answered 200")
	// The first delivery had its answer: another one changes nothing and
	// reports the hook's status.
	status, body = b.answerURL(t, strings.TrimSuffix(nackURL, "/nack")+"/ack", `{}`)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"data": {"status": "completed"}}`, body)
}

func TestAsyncTimeoutIsAFailedAttemptAndRetried(t *testing.T) {
	t.Parallel()
	b, rcv := asyncSetup(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Sundial-Async-Timeout", "1")
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h := b.scheduleNow(t, "/async/timeout", map[string]any{"minRetries": 1, "delaySecs": 5, "strategy": "fixed"})

	retrying := b.waitStatus(t, h.ID, "retry", 20*time.Second)
	require.Equal(t, 1, retrying.Attempts)
	require.Equal(t, "async timeout: no ack or nack within 1 s", retrying.FailureError)
	first := rcv.Received()[0]
	status, _ := b.answerURL(t, first.Header.Get("Sundial-Ack-URL"), `{}`)
	require.Equal(t, http.StatusGone, status, "too late")

	done := b.waitStatus(t, h.ID, "completed", 20*time.Second)
	require.Equal(t, 2, done.Attempts)
	require.Len(t, rcv.Received(), 2)
	tries := b.attempts(t, h.ID)
	require.Len(t, tries, 2)
	require.Equal(t, "failure", tries[0].Outcome)
	require.Equal(t, "expired", tries[0].Async.State)
	require.Equal(t, 1, tries[0].Async.TimeoutSecs, "the receiver's Sundial-Async-Timeout")
	require.Equal(t, retrying.FailureError, tries[0].Error)
	require.Equal(t, "success", tries[1].Outcome)
}

// TestAsyncNackBeforeTheAnswer: the receiver nacks inside its handler,
// before it answers 202. The nack is the attempt's result: the hook is
// retried, and the second delivery's 200 completes it.
func TestAsyncNackBeforeTheAnswer(t *testing.T) {
	t.Parallel()
	nackURLs, nacked := make(chan string, 1), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(nacked) }) }
	t.Cleanup(release)
	b, rcv := asyncSetup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n > 1 {
			w.WriteHeader(http.StatusOK)
			return
		}
		nackURLs <- r.Header.Get("Sundial-Nack-URL")
		<-nacked
		w.WriteHeader(http.StatusAccepted)
	})
	h := b.scheduleNow(t, "/async/early-nack", map[string]any{"minRetries": 1, "delaySecs": 5, "strategy": "fixed"})
	select {
	case url := <-nackURLs:
		status, body := b.answerURL(t, url, `{"reason": "busy"}`)
		release()
		require.Equal(t, http.StatusOK, status)
		require.JSONEq(t, `{"data": {"status": "nacked"}}`, body)
	case <-time.After(30 * time.Second):
		t.Fatal("never delivered")
	}
	retrying := b.waitStatus(t, h.ID, "retry", 10*time.Second)
	require.Equal(t, 1, retrying.Attempts)
	require.Equal(t, "nacked by receiver", retrying.FailureError)
	done := b.waitStatus(t, h.ID, "completed", 20*time.Second)
	require.Equal(t, 2, done.Attempts)
	require.Len(t, rcv.Received(), 2)
	tries := b.attempts(t, h.ID)
	require.Len(t, tries, 2)
	require.Equal(t, "nacked", tries[0].Async.State)
	require.JSONEq(t, `{"reason": "busy"}`, string(tries[0].AckBody))
}

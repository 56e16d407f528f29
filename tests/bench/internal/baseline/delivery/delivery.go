// Package delivery is the river baseline's one job: its arguments, and the
// worker that POSTs them to the receiver signed exactly as Sundial signs a
// delivery, so that both systems do the same work per hook.
package delivery

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
)

// Kind is the river job kind of a delivery.
const Kind = "delivery"

// Args are a delivery job's arguments.
type Args struct {
	// ID is sent as Sundial-Id: the receiver matches arrivals by it.
	ID   string `json:"id"`
	Path string `json:"path"`
	// Payload is the body's "data", embedded byte for byte.
	Payload json.RawMessage `json:"payload"`
	// RetryDelaySecs, when above 0, is the fixed delay before each retry
	// (NextRetry), as a Sundial hook's fixed retryOverride without jitter.
	RetryDelaySecs int `json:"retryDelaySecs,omitempty"`
}

// Kind names the job for river.
func (Args) Kind() string { return Kind }

// Sign is Sundial's v1 signature (pkg/signing, reimplemented because the
// benchmark depends on no Sundial module): "v1," and the hex HMAC-SHA256,
// keyed with the key's bytes, of "<timestamp>.<body>".
func Sign(key string, timestamp int64, body []byte) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(strconv.FormatInt(timestamp, 10)))
	h.Write([]byte{'.'})
	h.Write(body)
	return "v1," + hex.EncodeToString(h.Sum(nil))
}

// Body is the JSON body of a delivery, shaped like Sundial's:
// {"id","path","postAt","postedAt","data"}.
func Body(a Args, postAt, postedAt time.Time) ([]byte, error) {
	data := a.Payload
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	return json.Marshal(struct {
		ID       string          `json:"id"`
		Path     string          `json:"path"`
		PostAt   string          `json:"postAt"`
		PostedAt string          `json:"postedAt"`
		Data     json.RawMessage `json:"data"`
	}{a.ID, a.Path, postAt.UTC().Format(time.RFC3339Nano), postedAt.UTC().Format(time.RFC3339Nano), data})
}

// NewHTTPClient is the client a team would use for one fast endpoint:
// keep-alive with an idle connection per worker, HTTP/2 when the server
// offers it, TLS trusting caFile (the system roots when empty), and an
// overall timeout per request.
func NewHTTPClient(caFile string, timeout time.Duration, idlePerHost int) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pemBytes, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("CA file %s holds no certificate", caFile)
		}
		tlsConfig.RootCAs = pool
	}
	transport := &http.Transport{
		ForceAttemptHTTP2:   true,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: timeout,
		MaxIdleConns:        max(idlePerHost, 100),
		MaxIdleConnsPerHost: idlePerHost,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: transport, Timeout: timeout}, nil
}

// Worker delivers jobs. It logs one line per LogEvery deliveries, not one
// per job: what a team tuning for throughput would do.
type Worker struct {
	river.WorkerDefaults[Args]

	HTTP *http.Client
	// BaseURL is the receiver's https://host:port; a job's path follows it.
	BaseURL    string
	SigningKey string
	UserAgent  string
	LogEvery   int64
	Log        *slog.Logger

	delivered atomic.Int64
}

// Work makes the delivery's one attempt; an error (non-2xx included) makes
// river retry it with its backoff.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	sentAt := time.Now()
	body, err := Body(job.Args, job.ScheduledAt, sentAt)
	if err != nil {
		return fmt.Errorf("delivery body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.BaseURL+job.Args.Path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("delivery request: %w", err)
	}
	ts := sentAt.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.UserAgent)
	req.Header.Set("Sundial-Id", job.Args.ID)
	req.Header.Set("Sundial-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("Sundial-Signature", Sign(w.SigningKey, ts, body))
	resp, err := w.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("delivery post: %w", err)
	}
	// Drain a little so the connection is reused, as a real sender would.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errors.New("delivery post: HTTP " + strconv.Itoa(resp.StatusCode))
	}
	if n := w.delivered.Add(1); w.LogEvery > 0 && n%w.LogEvery == 0 {
		w.Log.Info("riverbase delivered", "total", n)
	}
	return nil
}

// NextRetry is when a failed job is due again: its RetryDelaySecs after
// now (the attempt just ended), or river's default backoff without one.
func (w *Worker) NextRetry(job *river.Job[Args]) time.Time {
	if job.Args.RetryDelaySecs > 0 {
		return time.Now().Add(time.Duration(job.Args.RetryDelaySecs) * time.Second)
	}
	return time.Time{}
}

// Delivered is how many deliveries succeeded so far.
func (w *Worker) Delivered() int64 { return w.delivered.Load() }

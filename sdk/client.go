package sundial

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Version is the SDK's version, sent in the User-Agent.
const Version = "0.1.0"

// DefaultBaseURL is the gateway's address when it runs on this machine with
// its default listen address (SUNDIAL_HTTP_ADDR=:8080).
const DefaultBaseURL = "http://localhost:8080"

// maxResponseBytes bounds what is read of an answer: a page of hooks is at
// most 4 MiB of hooks as stored, which JSON escaping may make larger.
const maxResponseBytes = 64 << 20

// Client calls Sundial's REST API as one project (its API key). It is safe
// for concurrent use.
type Client struct {
	// Hooks schedules, lists, inspects and cancels hooks, one or many.
	Hooks *HookService
	// Project reads and changes the project's settings.
	Project *ProjectService
	// APIKeys lists, creates and revokes the project's API keys.
	APIKeys *APIKeyService
	// SigningKeys lists, rotates and revokes the keys that sign deliveries.
	SigningKeys *SigningKeyService
	// Endpoints lists the project's destination servers and resumes a
	// paused one.
	Endpoints *EndpointService
	// Channels manages where the project's alerts go.
	Channels *ChannelService
	// Async answers async deliveries through their ack and nack URLs.
	Async *AsyncService
	// Sequences manages recurring, calendar-scheduled chains of hooks.
	Sequences *SequenceService
	// OrderingKeys shows ordering keys and resumes held ones.
	OrderingKeys *OrderingKeyService

	apiKey    string
	baseURL   string
	http      *http.Client
	userAgent string
	retry     RetryPolicy
	// sleep waits between tries (tests record the waits instead).
	sleep func(context.Context, time.Duration) error
}

// Option configures a Client.
type Option func(*Client)

// WithBaseURL sets the gateway's address, e.g. https://sundial.example.com
// (a trailing /v1 is accepted). The default is DefaultBaseURL.
func WithBaseURL(u string) Option {
	return func(c *Client) {
		u = strings.TrimRight(u, "/")
		c.baseURL = strings.TrimSuffix(u, "/v1")
	}
}

// WithHTTPClient sets the *http.Client that sends the requests (its
// Transport, proxies, TLS settings). The default is a client with a 30 s
// timeout per attempt.
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) { c.http = h }
}

// WithUserAgent puts the caller's own product before the SDK's User-Agent.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua + " " + c.userAgent }
}

// WithRetryPolicy replaces the default retry policy (DefaultRetryPolicy).
// RetryPolicy{MaxAttempts: 1} turns retries off.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *Client) { c.retry = p.withDefaults() }
}

// NewClient returns a client of the API with the project's API key (the
// X-API-Key header). A client used only for Async answers needs no key: the
// ack and nack URLs carry their own credential.
func NewClient(apiKey string, opts ...Option) *Client {
	c := &Client{
		apiKey:    apiKey,
		baseURL:   DefaultBaseURL,
		http:      &http.Client{Timeout: 30 * time.Second},
		userAgent: "sundial-go/" + Version,
		retry:     DefaultRetryPolicy,
		sleep:     sleep,
	}
	for _, o := range opts {
		o(c)
	}
	c.Hooks = &HookService{c: c}
	c.Project = &ProjectService{c: c}
	c.APIKeys = &APIKeyService{c: c}
	c.SigningKeys = &SigningKeyService{c: c}
	c.Endpoints = &EndpointService{c: c}
	c.Channels = &ChannelService{c: c}
	c.Async = &AsyncService{c: c}
	c.Sequences = &SequenceService{c: c}
	c.OrderingKeys = &OrderingKeyService{c: c}
	return c
}

// call is one operation: what to send and whether repeating it is safe.
type call struct {
	method string
	// path is under the API's root (/v1), unless absolute is set.
	path  string
	query url.Values
	// absolute is a full URL from elsewhere (an async ack or nack URL): it
	// gets no API key, which must never leave for another address.
	absolute string
	body     any
	header   http.Header
	// idempotent marks a POST that is safe to repeat.
	idempotent bool
}

// retryable reports whether the call may be sent again after a failure
// that may have reached the server.
func (cl call) retryable() bool {
	switch cl.method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
		return true
	}
	return cl.idempotent || cl.header.Get("Idempotency-Key") != ""
}

// do sends the call, retrying as the policy allows, and decodes a 2xx
// answer's body into out (when out is not nil and there is a body).
func (c *Client) do(ctx context.Context, cl call, out any) error {
	var raw []byte
	if cl.body != nil {
		var err error
		if raw, err = json.Marshal(cl.body); err != nil {
			return fmt.Errorf("sundial: encode %s %s: %w", cl.method, cl.path, err)
		}
	}
	target, err := c.target(cl)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.send(ctx, cl, target, raw)
		if err == nil && resp.status/100 == 2 {
			return decode(resp, out)
		}
		if err == nil {
			err = newAPIError(resp)
		}
		wait, ok := c.retry.next(ctx, cl, attempt, err)
		if !ok {
			return err
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			// Both stay visible to errors.Is and errors.As: the answer that
			// was to be retried, and why the retry did not happen.
			return errors.Join(err, serr)
		}
	}
}

func (c *Client) target(cl call) (string, error) {
	if cl.absolute != "" {
		u, err := url.Parse(cl.absolute)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// Not the URL itself: its token is a credential.
			return "", errors.New("sundial: the async URL is not an absolute http or https URL")
		}
		return cl.absolute, nil
	}
	u := c.baseURL + "/v1" + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	return u, nil
}

// response is an answer read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (c *Client) send(ctx context.Context, cl call, target string, raw []byte) (*response, error) {
	var body io.Reader
	if raw != nil {
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("sundial: %s %s: %w", cl.method, cl.path, err)
	}
	for k, v := range cl.header {
		req.Header[k] = v
	}
	if cl.absolute == "" && c.apiKey != "" {
		req.Header.Set("X-API-Key", c.apiKey)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &NetworkError{Method: cl.method, URL: redact(cl, target), Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, &NetworkError{Method: cl.method, URL: redact(cl, target), Err: err}
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// redact keeps an async URL's token out of error messages: it is the URL's
// only credential.
func redact(cl call, target string) string {
	if cl.absolute == "" {
		return target
	}
	u, err := url.Parse(target)
	if err != nil {
		return "async URL"
	}
	return u.Scheme + "://" + u.Host + "/v1/async/…"
}

func decode(resp *response, out any) error {
	if out == nil || len(bytes.TrimSpace(resp.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(resp.body, out); err != nil {
		return fmt.Errorf("sundial: decode answer (status %d): %w", resp.status, err)
	}
	return nil
}

// NetworkError is a request that got no answer: the connection failed or
// broke, or the context ended.
type NetworkError struct {
	Method, URL string
	Err         error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("sundial: %s %s: %v", e.Method, e.URL, e.Err)
}

func (e *NetworkError) Unwrap() error { return e.Err }

// ErrMissingID is an empty id or URL given to a method that needs one; the
// error wrapping it names the argument.
var ErrMissingID = errors.New("sundial: missing argument")

// pathOf is base + "/" + the escaped id, or an error naming the argument
// when id is empty (the request would name another route).
func pathOf(base, name, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrMissingID, name)
	}
	return base + "/" + url.PathEscape(id), nil
}

// envelope is the API's {"data": ...} wrapper of a single object.
type envelope[T any] struct {
	Data T `json:"data"`
}

// get sends cl and returns the answer's data.
func get[T any](ctx context.Context, c *Client, cl call) (T, error) {
	var out envelope[T]
	err := c.do(ctx, cl, &out)
	return out.Data, err
}

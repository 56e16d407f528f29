package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/pkg/signing"
)

// Request is one delivery to make.
type Request struct {
	HookID string
	// URL is the destination: https:// + the project's domain + the path.
	URL  string
	Path string
	// Data is the hook's JSON object, embedded in the body byte for byte.
	Data      json.RawMessage
	PostAt    time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
	// Keys sign the delivery: the active key first, then retiring keys.
	Keys []string
	// Scheme is the project's choice of signature headers (empty: Sundial's).
	Scheme signing.SignatureScheme
	// Authorization, when set, is sent as the Authorization header.
	Authorization string
	// LeaseSeq is the lease the hook is delivered under, and AsyncSecret the
	// project's secret: together they make the delivery's ack and nack URLs
	// (package asyncurl), sent with every delivery.
	LeaseSeq    int64
	AsyncSecret []byte
}

// Result is what happened to a delivery.
type Result struct {
	Outcome eventv1.Outcome
	// StatusCode is the receiver's HTTP status, 0 when there was no answer.
	StatusCode int
	// TimedOut says the exchange ended at the delivery timeout without an
	// answer (StatusCode 0).
	TimedOut bool
	// Error is the failure in words, empty on success.
	Error string
	// Class is the failure's class, unspecified on success.
	Class eventv1.FailureClass
	// StartedAt is when the request was sent; Duration is the wall time
	// of the exchange up to the end of the excerpt.
	StartedAt time.Time
	Duration  time.Duration
	// Excerpt is the start of the response body, valid UTF-8.
	Excerpt string
	// AsyncTimeoutSeconds is what a 202 asked for, 0 if nothing valid.
	AsyncTimeoutSeconds int32
	// RetryAfter is the wait a 429 or 503 asked for in its Retry-After
	// header, bounded (pkg/retry); 0 when there was none.
	RetryAfter time.Duration
	// RequestHeaders are the request's headers and ResponseHeaders the
	// answer's, as the attempt records them (record.go); nil when no
	// request was prepared or no answer came.
	RequestHeaders, ResponseHeaders *eventv1.Headers
}

// headerNames are the Sundial-named headers under the deployment's prefix.
type headerNames struct {
	signed                        signing.Headers
	asyncTimeout, ackURL, nackURL string
}

func newHeaderNames(prefix string) headerNames {
	return headerNames{
		signed:       signing.NewHeaders(prefix),
		asyncTimeout: prefix + "-Async-Timeout",
		ackURL:       prefix + "-Ack-URL",
		nackURL:      prefix + "-Nack-URL",
	}
}

// Send delivers r once. Every outcome of the exchange, failures included, is
// a Result; the error is non-nil only when nothing counts as an attempt and
// the hook should be handed back: ctx ended first, or the host's new
// connections are spent for now (ErrConnectionRate, before anything was
// sent).
//
// Once the status line and headers have arrived, the status decides the
// outcome: the receiver has the delivery and answered. A body that then
// breaks off (the connection closed, or the deadline hit) only cuts the
// excerpt short, which says so.
func (c *Client) Send(ctx context.Context, r Request) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	t, err := c.targets.parse(r.URL)
	if err != nil {
		return refused(err.Error()), nil
	}
	if len(r.Keys) == 0 {
		return refused("no signing key"), nil
	}
	// The body's postedAt and the signed timestamp are taken here, at send
	// time, never when the message arrived: a receiver checks their age. The
	// deadline counts from the same instant, so a timed-out attempt's
	// duration is never reported shorter than the limit.
	sentAt := time.Now()
	x := newExchange(ctx, sentAt.Add(c.timeout))
	defer x.end()
	prepared := c.Prepare(r, sentAt)

	// Recorded before the exchange: an attempt whose connection failed
	// still shows what it was to send.
	res := Result{StartedAt: sentAt, RequestHeaders: prepared.Recorded(t.host)}
	resp, err := c.do(x, t, prepared)
	if errors.Is(err, ErrConnectionRate) && ctx.Err() == nil {
		return Result{}, err
	}
	if err != nil {
		return c.failed(ctx, x, res, err)
	}
	if x.err() != nil {
		// An answer whose headers came only after the deadline is a
		// timeout, however the headers and the deadline raced.
		drainAndClose(resp.Body)
		return c.failed(ctx, x, res, x.err())
	}
	res.StatusCode = resp.StatusCode
	res.ResponseHeaders = prepared.recordAnswer(resp)
	excerpt, readErr := c.readExcerpt(resp.Body)
	res.Duration = time.Since(sentAt)
	drainAndClose(resp.Body)
	if readErr == nil && x.err() != nil {
		// The limit covers the whole exchange, and a body cut off by the
		// deadline may read as merely ended.
		readErr = x.err()
	}
	if readErr != nil {
		if ctx.Err() != nil {
			// Shutting down: hand back, as for any exchange cut short.
			return Result{}, ctx.Err()
		}
		excerpt = cutShort(excerpt, c.bodyError(x, readErr))
	}
	res.Excerpt = excerpt
	c.classify(&res, resp)
	return res, nil
}

// cutShort adds to the excerpt of a body that broke off after the status
// and headers arrived why it did: "... [response body cut short: timeout
// after 10s]".
func cutShort(excerpt, why string) string {
	note := "[response body cut short: " + why + "]"
	if excerpt == "" {
		return note
	}
	return excerpt + " " + note
}

// bodyError puts an error reading a response body in words.
func (c *Client) bodyError(x *exchange, err error) string {
	switch {
	case errors.Is(x.err(), context.DeadlineExceeded):
		return Describe(context.DeadlineExceeded, c.timeout)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed"
	}
	return Describe(err, c.timeout)
}

// do sends the prepared delivery to t on a connection of the pool, as the
// first to open a connection to a cold host, or after it (warm.go). A
// redirect is an answer like any other non-2xx: following it would send a
// signed payload somewhere the customer never named.
func (c *Client) do(x *exchange, t target, p Prepared) (*http.Response, error) {
	opened, err := c.warm.enter(x, t.host)
	if err != nil {
		return nil, err
	}
	conn, err := c.conns.get(x, t)
	opened(err == nil)
	if err != nil {
		return nil, err
	}
	resp, err := conn.roundTrip(x, t, p)
	if err != nil {
		conn.host.discard(conn)
		return nil, err
	}
	c.warm.touch(t.host)
	return resp, nil
}

// Warm opens connections to the receiver of rawURL until it has n (idle,
// in use or being opened; at most HostConcurrency), to be kept for the
// next deliveries there; with as many already, it returns at once. The
// dispatcher calls it while claimed hooks wait out their holds, so that
// the deliveries due at a host gone cold (no connection for
// idleConnTimeout) do not spend their due instant on the TCP and TLS
// handshakes, two round trips to the receiver and the handshake's CPU on
// both sides. It opens the connections as deliveries would: the first
// alone, as the first to a cold host (warm.go), then the rest side by
// side, within the client's timeout; an error only says a connection was
// not opened (the delivery will try, and report why).
func (c *Client) Warm(ctx context.Context, rawURL string, n int) error {
	t, err := c.targets.parse(rawURL)
	if err != nil {
		return err
	}
	x := newExchange(ctx, time.Now().Add(c.timeout))
	defer x.end()
	ctx = x.context()
	opened, err := c.warm.enter(x, t.host)
	if err != nil {
		return err
	}
	err = c.conns.open(ctx, t, 1)
	opened(err == nil)
	if err != nil || n <= 1 {
		return err
	}
	return c.conns.open(ctx, t, n)
}

// failed fills in a failed exchange, unless the caller's context ended.
func (c *Client) failed(ctx context.Context, x *exchange, res Result, err error) (Result, error) {
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if res.Duration == 0 {
		res.Duration = time.Since(res.StartedAt)
	}
	res.Outcome = eventv1.Outcome_OUTCOME_FAILURE
	if errors.Is(x.err(), context.DeadlineExceeded) {
		// However the transport words it, the deadline is what ended it.
		err = context.DeadlineExceeded
		res.TimedOut = true
	}
	res.Error = Describe(err, c.timeout)
	res.Class = Classify(err)
	return res, nil
}

// refused is the failed attempt of a delivery that was never sent: why is
// the failure in words.
func refused(why string) Result {
	return Result{Outcome: eventv1.Outcome_OUTCOME_FAILURE, Error: why,
		Class: eventv1.FailureClass_FAILURE_CLASS_REFUSED, StartedAt: time.Now()}
}

// classify turns the status of an answer into an outcome (docs/product.md,
// "Statuses and retries").
func (c *Client) classify(res *Result, resp *http.Response) {
	switch code := resp.StatusCode; {
	case code == http.StatusAccepted:
		res.Outcome = eventv1.Outcome_OUTCOME_ASYNC
		res.AsyncTimeoutSeconds = asyncTimeout(resp.Header.Get(c.header.asyncTimeout))
	case code >= 200 && code < 300:
		res.Outcome = eventv1.Outcome_OUTCOME_SUCCESS
	default:
		res.Outcome = eventv1.Outcome_OUTCOME_FAILURE
		res.Error = "HTTP " + strconv.Itoa(code)
		res.Class = failclass.OfStatus(code)
		if retry.RetryAfterStatus(code) {
			if wait, ok := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				res.RetryAfter = wait
			}
		}
	}
}

// asyncTimeout is the wait a 202's Sundial-Async-Timeout asks for, 0 when
// it is missing or out of bounds; a valid value replaces the project's
// async timeout for this attempt.
func asyncTimeout(v string) int32 {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || !asyncurl.ValidTimeout(n) {
		return 0
	}
	return int32(n)
}

// asyncURLs are the delivery's ack and nack URLs on the public base URL.
func (c *Client) asyncURLs(r Request) (ack, nack string) {
	id, err := uuid.Parse(r.HookID)
	if err != nil {
		id = uuid.Nil // the dispatcher parsed it already; a URL that answers 404 at worst
	}
	return asyncurl.URLs(c.publicURL, r.AsyncSecret, id, r.LeaseSeq)
}

// drainAndClose reads a bounded amount of what is left so that the
// connection can carry the next delivery, then closes the body.
func drainAndClose(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, maxDrain)
	_ = body.Close()
}

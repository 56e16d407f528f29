package delivery_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
)

const userAgent = "Sundial/1.2.3 (+https://github.com/sundial-run/sundial)"

type bundle struct {
	receiver *fixture.Receiver
	client   *delivery.Client
	caFile   string
}

type options struct {
	answer  http.HandlerFunc
	timeout time.Duration
	excerpt int
	prefix  string
	// guard defaults to one that allows the receivers' 127.0.0.0/8.
	guard *egress.Guard
	// untrusted leaves the receivers' CA out of the client's roots.
	untrusted bool
}

func setup(t *testing.T, o options) bundle {
	t.Helper()
	if o.timeout == 0 {
		o.timeout = 5 * time.Second
	}
	if o.excerpt == 0 {
		o.excerpt = 1024
	}
	if o.prefix == "" {
		o.prefix = "Sundial"
	}
	if o.guard == nil {
		o.guard = egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	}
	receiver := fixture.StartReceiver(t, o.answer)
	caFile := fixture.CAFile(t, receiver)
	rootsFile := caFile
	if o.untrusted {
		rootsFile = ""
	}
	roots, err := egress.LoadRoots(rootsFile)
	require.NoError(t, err)
	client, err := delivery.NewClient(delivery.Options{
		Timeout: o.timeout, ExcerptBytes: o.excerpt, HeaderPrefix: o.prefix,
		UserAgent: userAgent, RootCAs: roots, Guard: o.guard,
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	return bundle{receiver: receiver, client: client, caFile: caFile}
}

func request(url string, keys ...string) delivery.Request {
	return delivery.Request{
		HookID:    "0190b6a4-7f1e-7c3a-9f5e-2a1b3c4d5e6f",
		URL:       url,
		Path:      "/hooks/remind?user=7&kind=a",
		Data:      json.RawMessage(`{"b": 1,  "a": "<tag> & more", "n": [1, 2.50]}`),
		PostAt:    time.Date(2030, 1, 2, 3, 4, 5, 600_000_000, time.FixedZone("CET", 3600)),
		CreatedAt: time.Date(2029, 12, 31, 23, 0, 0, 0, time.UTC),
		UpdatedAt: time.Date(2030, 1, 1, 0, 0, 0, 123_456_789, time.UTC),
		Keys:      keys,
	}
}

// hmacHex is the receiver's side of the signature, computed without the
// signing package.
func hmacHex(key string, parts ...string) string {
	h := hmac.New(sha256.New, []byte(key))
	for _, p := range parts {
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func send(t *testing.T, c *delivery.Client, r delivery.Request) delivery.Result {
	t.Helper()
	res, err := c.Send(context.Background(), r)
	require.NoError(t, err)
	return res
}

func TestSendCarriesTheContractHeadersAndBody(t *testing.T) {
	t.Parallel()
	b := setup(t, options{answer: func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("thanks"))
	}})
	before := time.Now()
	res := send(t, b.client, request(b.receiver.URL+"/hooks/remind?user=7&kind=a", "whsec_active"))
	after := time.Now()

	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome)
	require.Equal(t, 200, res.StatusCode)
	require.Empty(t, res.Error)
	require.Equal(t, "thanks", res.Excerpt)
	require.Positive(t, res.Duration)
	require.WithinRange(t, res.StartedAt, before, after)

	got := b.receiver.Received()
	require.Len(t, got, 1)
	req := got[0]
	require.Equal(t, http.MethodPost, req.Method)
	require.Equal(t, "/hooks/remind", req.Path)
	require.Equal(t, "user=7&kind=a", req.RawQuery)

	names := make([]string, 0, len(req.Header))
	for name := range req.Header {
		names = append(names, name)
	}
	sort.Strings(names)
	require.Equal(t, []string{"Content-Length", "Content-Type", "Sundial-Ack-Url", "Sundial-Id", "Sundial-Nack-Url",
		"Sundial-Signature", "Sundial-Timestamp", "User-Agent", "X-Sundial-Signature"}, names)
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.Equal(t, userAgent, req.Header.Get("User-Agent"))
	require.Equal(t, "0190b6a4-7f1e-7c3a-9f5e-2a1b3c4d5e6f", req.Header.Get("Sundial-Id"))

	// The timestamp and postedAt are one instant, taken at send time.
	ts := req.Header.Get("Sundial-Timestamp")
	var body struct {
		PostedAt string `json:"postedAt"`
	}
	require.NoError(t, json.Unmarshal(req.Body, &body))
	postedAt, err := time.Parse(time.RFC3339Nano, body.PostedAt)
	require.NoError(t, err)
	require.WithinRange(t, postedAt, before, after)
	require.Equal(t, strconv.FormatInt(postedAt.Unix(), 10), ts)
	require.True(t, strings.HasSuffix(body.PostedAt, "Z"))

	// Exactly these bytes, data embedded as scheduled, times in UTC.
	require.Equal(t, `{"id":"0190b6a4-7f1e-7c3a-9f5e-2a1b3c4d5e6f","path":"/hooks/remind?user=7&kind=a",`+
		`"postAt":"2030-01-02T02:04:05.6Z","postedAt":"`+body.PostedAt+`",`+
		`"data":{"b": 1,  "a": "<tag> & more", "n": [1, 2.50]},`+
		`"createdAt":"2029-12-31T23:00:00Z","updatedAt":"2030-01-01T00:00:00.123456789Z"}`, string(req.Body))

	require.Equal(t, "v1,"+hmacHex("whsec_active", ts, ".", string(req.Body)), req.Header.Get("Sundial-Signature"))
	require.Equal(t, hmacHex("whsec_active", string(req.Body)), req.Header.Get("X-Sundial-Signature"))
}

func TestSendSignsWithEveryKeyActiveFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	r := request(b.receiver.URL+"/x", "whsec_new", "whsec_old")
	r.Authorization = "Bearer receiver-token"
	send(t, b.client, r)

	req := b.receiver.Received()[0]
	ts := req.Header.Get("Sundial-Timestamp")
	require.Equal(t,
		"v1,"+hmacHex("whsec_new", ts, ".", string(req.Body))+" v1,"+hmacHex("whsec_old", ts, ".", string(req.Body)),
		req.Header.Get("Sundial-Signature"))
	// The legacy header switches to the new key at once.
	require.Equal(t, hmacHex("whsec_new", string(req.Body)), req.Header.Get("X-Sundial-Signature"))
	require.Equal(t, "Bearer receiver-token", req.Header.Get("Authorization"))
}

func TestSendUsesTheHeaderPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t, options{prefix: "Acme", answer: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Acme-Async-Timeout", "900")
		w.WriteHeader(http.StatusAccepted)
	}})
	res := send(t, b.client, request(b.receiver.URL+"/x", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_ASYNC, res.Outcome)
	require.EqualValues(t, 900, res.AsyncTimeoutSeconds)

	h := b.receiver.Received()[0].Header
	require.NotEmpty(t, h.Get("Acme-Id"))
	require.NotEmpty(t, h.Get("Acme-Timestamp"))
	require.NotEmpty(t, h.Get("Acme-Signature"))
	require.NotEmpty(t, h.Get("X-Acme-Signature"))
	require.NotEmpty(t, h.Get("Acme-Ack-URL"))
	require.NotEmpty(t, h.Get("Acme-Nack-URL"))
	require.Empty(t, h.Get("Sundial-Signature"))
	require.Empty(t, h.Get("Sundial-Ack-URL"))
	// The User-Agent names Sundial whatever the prefix.
	require.Equal(t, userAgent, h.Get("User-Agent"))
}

func TestSendClassifiesAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		status  int
		header  map[string]string
		outcome eventv1.Outcome
		err     string
		async   int32
		wait    time.Duration
	}{
		{name: "200", status: 200, outcome: eventv1.Outcome_OUTCOME_SUCCESS},
		{name: "201", status: 201, outcome: eventv1.Outcome_OUTCOME_SUCCESS},
		{name: "204", status: 204, outcome: eventv1.Outcome_OUTCOME_SUCCESS},
		{name: "202", status: 202, outcome: eventv1.Outcome_OUTCOME_ASYNC},
		{name: "202 with timeout", status: 202, header: map[string]string{"Sundial-Async-Timeout": "600"}, outcome: eventv1.Outcome_OUTCOME_ASYNC, async: 600},
		{name: "202 with bad timeout", status: 202, header: map[string]string{"Sundial-Async-Timeout": "soon"}, outcome: eventv1.Outcome_OUTCOME_ASYNC},
		{name: "202 with negative timeout", status: 202, header: map[string]string{"Sundial-Async-Timeout": "-5"}, outcome: eventv1.Outcome_OUTCOME_ASYNC},
		{name: "202 with too long timeout", status: 202, header: map[string]string{"Sundial-Async-Timeout": "86401"}, outcome: eventv1.Outcome_OUTCOME_ASYNC},
		{name: "304", status: 304, outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "HTTP 304"},
		{name: "400", status: 400, outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "HTTP 400"},
		{name: "500", status: 500, outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "HTTP 500"},
		{name: "503", status: 503, outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "HTTP 503"},
		{name: "503 with Retry-After", status: 503, header: map[string]string{"Retry-After": "7"}, outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "HTTP 503", wait: 7 * time.Second},
		{name: "429 with Retry-After", status: 429, header: map[string]string{"Retry-After": "2"}, outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "HTTP 429", wait: 2 * time.Second},
		{name: "429 with a day of Retry-After", status: 429, header: map[string]string{"Retry-After": "86400"}, outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "HTTP 429", wait: time.Hour},
		{name: "429 with bad Retry-After", status: 429, header: map[string]string{"Retry-After": "soon"}, outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "HTTP 429"},
		{name: "500 ignores Retry-After", status: 500, header: map[string]string{"Retry-After": "7"}, outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "HTTP 500"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{answer: func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
			}})
			res := send(t, b.client, request(b.receiver.URL+"/x", "k"))
			require.Equal(t, tc.outcome, res.Outcome)
			require.Equal(t, tc.status, res.StatusCode)
			require.Equal(t, tc.err, res.Error)
			require.Equal(t, tc.async, res.AsyncTimeoutSeconds)
			require.Equal(t, tc.wait, res.RetryAfter)
		})
	}
}

func TestSendNeverFollowsRedirects(t *testing.T) {
	t.Parallel()
	target := setup(t, options{})
	b := setup(t, options{answer: func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.receiver.URL+"/elsewhere", http.StatusFound)
	}})
	res := send(t, b.client, request(b.receiver.URL+"/x", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.Equal(t, 302, res.StatusCode)
	require.Equal(t, "HTTP 302", res.Error)
	require.Len(t, b.receiver.Received(), 1)
	require.Empty(t, target.receiver.Received())
}

func TestSendTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	b := setup(t, options{timeout: 300 * time.Millisecond, answer: func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}})
	// Runs before the receiver's Close, which waits for its handlers.
	t.Cleanup(func() { close(release) })

	res := send(t, b.client, request(b.receiver.URL+"/slow", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.Equal(t, "timeout after 300ms", res.Error)
	require.Zero(t, res.StatusCode)
	require.GreaterOrEqual(t, res.Duration, 300*time.Millisecond)
}

func TestSendTimingOutInTheBodyKeepsTheStatus(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	// Long enough for the handshake and the headers on a loaded machine
	// under the race detector: they must arrive within it.
	const timeout = 2 * time.Second
	b := setup(t, options{timeout: timeout, answer: func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}})
	t.Cleanup(func() { close(release) })

	// The 200 arrived in time: the receiver has the delivery, so it is a
	// success, and the excerpt says why it is short.
	res := send(t, b.client, request(b.receiver.URL+"/slow-body", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome, res.Error)
	require.Empty(t, res.Error)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "partial [response body cut short: timeout after 2s]", res.Excerpt)
	require.GreaterOrEqual(t, res.Duration, timeout)
}

func TestSendRejectsAnUntrustedCertificate(t *testing.T) {
	t.Parallel()
	b := setup(t, options{untrusted: true})
	res := send(t, b.client, request(b.receiver.URL+"/x", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.Equal(t, "TLS: certificate signed by unknown authority", res.Error)
	require.Empty(t, b.receiver.Received())
}

func TestSendChecksTheCertificateName(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	// The test certificate names 127.0.0.1, ::1 and example.com, not localhost.
	_, port, err := net.SplitHostPort(b.receiver.Addr())
	require.NoError(t, err)
	res := send(t, b.client, request("https://localhost:"+port+"/x", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.True(t, strings.HasPrefix(res.Error, "TLS: certificate is valid for "), res.Error)
	require.True(t, strings.HasSuffix(res.Error, "not localhost"), res.Error)
}

func TestSendRefusesLoopbackUnlessAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t, options{guard: egress.NewGuard(false, nil)})
	res := send(t, b.client, request(b.receiver.URL+"/x", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.Equal(t, "refused: destination 127.0.0.1 is a loopback address", res.Error)
	require.Empty(t, b.receiver.Received())

	allowed := setup(t, options{guard: egress.NewGuard(true, nil)})
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, send(t, allowed.client, request(allowed.receiver.URL+"/x", "k")).Outcome)
	require.Len(t, allowed.receiver.Received(), 1)
}

func TestSendRefusesNamesThatResolveInside(t *testing.T) {
	t.Parallel()
	b := setup(t, options{guard: egress.NewGuard(false, nil)})
	_, port, err := net.SplitHostPort(b.receiver.Addr())
	require.NoError(t, err)
	// "localhost" resolves without DNS; the guard sees the loopback address.
	res := send(t, b.client, request("https://localhost:"+port+"/x", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.True(t, strings.HasPrefix(res.Error, "refused: destination "), res.Error)
	require.Contains(t, res.Error, "is a loopback address")
	require.Empty(t, b.receiver.Received())
}

func TestSendReportsConnectionRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	res := send(t, b.client, request("https://"+addr+"/x", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.Equal(t, "connection refused", res.Error)
}

func TestSendAcceptsOnlyHTTPS(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	res := send(t, b.client, request(strings.Replace(b.receiver.URL, "https://", "http://", 1)+"/x", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.Contains(t, res.Error, "invalid URL")
	require.Empty(t, b.receiver.Received())
}

func TestSendKeepsABoundedValidExcerpt(t *testing.T) {
	t.Parallel()
	// 2-byte characters, a NUL and an invalid byte; the limit splits a character.
	answer := strings.Repeat("é", 600) + "\x00\xff" + strings.Repeat("x", 100_000)
	b := setup(t, options{excerpt: 11, answer: func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(answer))
	}})
	res := send(t, b.client, request(b.receiver.URL+"/x", "k"))
	require.Equal(t, strings.Repeat("é", 5), res.Excerpt)

	require.Equal(t, "é\uFFFD\uFFFDx", delivery.Excerpt([]byte("é\x00\xffx"), false))
	excerpt := delivery.Excerpt([]byte(answer[:1203]), true)
	require.True(t, utf8.ValidString(excerpt))
	require.Equal(t, strings.Repeat("é", 600)+"\uFFFD\uFFFDx", excerpt)
	require.Equal(t, "a", delivery.Excerpt([]byte("aé")[:2], true))
}

func TestSendHandsBackWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	release := make(chan struct{})
	// The receiver never answers before the test ends: only the caller's
	// context can end the exchange. (Returning when the request's own
	// context ends let the server answer 200 first on loaded machines.)
	b := setup(t, options{answer: func(http.ResponseWriter, *http.Request) {
		close(arrived)
		<-release
	}})
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	res, err := b.client.Send(ctx, request(b.receiver.URL+"/x", "k"))
	require.ErrorIs(t, err, context.Canceled, "result: %+v", res)
}

// TestSendClassifiesFailures checks the class of each kind of failure
// against real servers on this machine (no network: an unresolvable name
// uses the reserved .invalid domain, which fails resolution locally).
func TestSendClassifiesFailures(t *testing.T) {
	t.Parallel()
	answering := func(status int, header ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			w.WriteHeader(status)
		}
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())
	release := make(chan struct{})
	slow := setup(t, options{timeout: 300 * time.Millisecond, answer: func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}})
	t.Cleanup(func() { close(release) })
	huge := strings.Repeat("x", 8<<10)

	cases := []struct {
		name string
		b    bundle
		url  string // relative to the bundle's receiver when it starts with /
		want eventv1.FailureClass
	}{
		{"410", setup(t, options{answer: answering(410)}), "/x", eventv1.FailureClass_FAILURE_CLASS_GONE},
		{"429", setup(t, options{answer: answering(429, "Retry-After", "3")}), "/x", eventv1.FailureClass_FAILURE_CLASS_RATE_LIMITED},
		{"404", setup(t, options{answer: answering(404)}), "/x", eventv1.FailureClass_FAILURE_CLASS_CLIENT_ERROR},
		{"413", setup(t, options{answer: answering(413)}), "/x", eventv1.FailureClass_FAILURE_CLASS_TOO_LARGE},
		{"500", setup(t, options{answer: answering(500)}), "/x", eventv1.FailureClass_FAILURE_CLASS_SERVER_ERROR},
		{"503", setup(t, options{answer: answering(503)}), "/x", eventv1.FailureClass_FAILURE_CLASS_SERVER_ERROR},
		{"redirect", setup(t, options{answer: answering(302, "Location", "/elsewhere")}), "/x", eventv1.FailureClass_FAILURE_CLASS_REDIRECT},
		{"timeout", slow, "/x", eventv1.FailureClass_FAILURE_CLASS_TIMEOUT},
		{"untrusted certificate", setup(t, options{untrusted: true}), "/x", eventv1.FailureClass_FAILURE_CLASS_TLS},
		{"closed port", setup(t, options{}), "https://" + closedAddr + "/x", eventv1.FailureClass_FAILURE_CLASS_CONNECT},
		{"unresolvable name", setup(t, options{}), "https://no-such-host.invalid/x", eventv1.FailureClass_FAILURE_CLASS_DNS},
		{"refused destination", setup(t, options{guard: egress.NewGuard(false, nil)}), "/x", eventv1.FailureClass_FAILURE_CLASS_REFUSED},
		{"headers too large", setup(t, options{answer: func(w http.ResponseWriter, _ *http.Request) {
			for i := range 10 {
				w.Header().Set("X-Big-"+strconv.Itoa(i), huge)
			}
			w.WriteHeader(200)
		}}), "/x", eventv1.FailureClass_FAILURE_CLASS_TOO_LARGE},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := tc.url
			if strings.HasPrefix(url, "/") {
				url = tc.b.receiver.URL + url
			}
			res := send(t, tc.b.client, request(url, "k"))
			require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome, res.Error)
			require.Equal(t, tc.want, res.Class, res.Error)
		})
	}

	t.Run("no signing key", func(t *testing.T) {
		t.Parallel()
		b := setup(t, options{})
		res := send(t, b.client, request(b.receiver.URL+"/x"))
		require.Equal(t, eventv1.FailureClass_FAILURE_CLASS_REFUSED, res.Class)
	})
	t.Run("success has no class", func(t *testing.T) {
		t.Parallel()
		b := setup(t, options{})
		res := send(t, b.client, request(b.receiver.URL+"/x", "k"))
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome)
		require.Equal(t, eventv1.FailureClass_FAILURE_CLASS_UNSPECIFIED, res.Class)
	})
}

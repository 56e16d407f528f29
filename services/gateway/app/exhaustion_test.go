package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/hooklist/hooklisttest"
)

// A query string that does not parse is refused on every route instead of
// being read in part. Before, echo kept what parsed: past 10,000
// parameters (url.ParseQuery's limit) nothing, with a ';' everything but
// that parameter, so status=failed listed pending hooks.
func TestAQueryStringThatDoesNotParseIs400(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.loadHooks(b.creds.ProjectID, []hooklisttest.Hook{
		{ID: uuid.New(), Status: "pending", CreatedAt: listDay, PostAt: listDay},
		{ID: uuid.New(), Status: "failed", CreatedAt: listDay, PostAt: listDay},
	})
	_, page := b.list("status=failed")
	require.Len(t, page.Data, 1, "the filter applies")

	many := "status=failed" + strings.Repeat("&limit=5", 10_000) // 10,001 parameters
	for name, query := range map[string]string{
		"10,001 parameters":   many,
		"a ';' separator":     "status=failed;limit=5",
		"a bad escape":        "status=fail%zzed",
		"a ';' on a get hook": "a=1;b=2",
	} {
		path := "/v1/hooks?" + query
		if strings.HasPrefix(name, "a ';' on") {
			path = "/v1/hooks/" + uuid.NewString() + "?" + query
		}
		res := b.do(http.MethodGet, path, nil)
		e := res.requireError(t, http.StatusBadRequest, "invalid_request", "query")
		require.Contains(t, e.Error, "query", name)
	}
}

// Failed authentications are counted per client address: past the limit
// an address gets 429 with Retry-After (before its key is looked up)
// until the minute ends, while another address is unaffected, and a key
// that authenticated before still works from the blocked address (a
// client behind the same NAT or ingress as the guesser). Loopback is
// 127.0.0.0/8 on Linux, so the two clients dial from 127.0.0.2 and
// 127.0.0.3.
func TestFailedAuthenticationIsThrottledPerAddress(t *testing.T) {
	t.Parallel()
	const limit = 5
	b := setup(t, func(c *app.Config) {
		c.AuthFailuresPerMinute = limit
		c.KeyCacheTTL = 0 // every valid key is looked up: the throttle applies to it too
	})
	guesser, other := clientFrom(t, "127.0.0.2"), clientFrom(t, "127.0.0.3")
	wrong := "sk_live_" + strings.Repeat("a", 8) + "_" + strings.Repeat("A", 43) // well-formed, unknown
	send := func(c *http.Client, key string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(b.ctx, http.MethodGet, b.base+"/v1/project", nil)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		res, err := c.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		require.NoError(t, res.Body.Close())
		return res
	}
	require.Equal(t, http.StatusOK, send(other, b.creds.APIKey).StatusCode, "the valid key authenticates once")
	for i := range limit {
		key := wrong
		if i == 0 {
			key = "" // a missing key counts too
		}
		require.Equal(t, http.StatusUnauthorized, send(guesser, key).StatusCode, "failure %d", i+1)
	}
	for _, key := range []string{wrong, ""} {
		res := send(guesser, key)
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
		require.NotEmpty(t, res.Header.Get("Retry-After"))
	}
	for range 3 {
		require.Equal(t, http.StatusOK, send(guesser, b.creds.APIKey).StatusCode,
			"a key that authenticated is looked up from the blocked address")
		require.Equal(t, http.StatusTooManyRequests, send(guesser, wrong).StatusCode, "the guesser still is not")
	}
	require.Equal(t, http.StatusUnauthorized, send(other, wrong).StatusCode, "another address is unaffected")
	require.Equal(t, http.StatusOK, send(other, b.creds.APIKey).StatusCode)
}

// clientFrom is an HTTP client whose connections come from the local
// address ip.
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	transport := &http.Transport{DialContext: dialer.DialContext}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: 30 * time.Second}
}

// While PostgreSQL cannot be reached every API route answers 503 with
// Retry-After (before: 500), a malformed key is still refused with 401
// (it is never looked up), and the API recovers by itself once the
// database is back. The database is reached through a TCP proxy the test
// cuts: the real server stays up for the other tests.
func TestUnreachableDatabaseIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	p := &pgProxy{t: t}
	b := setup(t, func(c *app.Config) {
		c.DatabaseURL = p.start(c.DatabaseURL)
		c.KeyCacheTTL = 0
	})
	hook := b.post(`{"path":"/p","postAt":"2099-01-01T00:00:00Z","data":{}}`)
	require.Equal(t, http.StatusCreated, hook.status, string(hook.body))
	id := hook.hook(t).ID

	p.down()
	type call struct{ method, path, body string }
	for _, c := range []call{
		{http.MethodGet, "/v1/hooks", ""},
		{http.MethodGet, "/v1/hooks/" + id, ""},
		{http.MethodPost, "/v1/hooks", `{"path":"/p","postAt":"2099-01-01T00:00:00Z","data":{}}`},
		{http.MethodGet, "/v1/project", ""},
	} {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		res := b.do(c.method, c.path, body)
		res.requireError(t, http.StatusServiceUnavailable, "unavailable")
		require.Equal(t, "5", res.header.Get("Retry-After"), "%s %s", c.method, c.path)
	}
	res := b.do(http.MethodGet, "/v1/hooks", nil, header("X-API-Key", "not-a-key"))
	res.requireError(t, http.StatusUnauthorized, "unauthorized")

	p.up()
	require.Eventually(t, func() bool {
		return b.do(http.MethodGet, "/v1/hooks/"+id, nil).status == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "the API recovers once the database is back")
}

// A gateway whose connections take no writes, as on a standby that a
// failover has not promoted yet (docs/operations.md, "PostgreSQL:
// failover, backups and restore"), answers a create with 503 and
// Retry-After, never 500, and creates nothing.
func TestCreateOnAReadOnlyDatabaseIsA503(t *testing.T) {
	t.Parallel()
	b := setup(t, func(cfg *app.Config) {
		u, err := url.Parse(cfg.DatabaseURL)
		require.NoError(t, err)
		q := u.Query()
		q.Set("default_transaction_read_only", "on") // every write fails with 25006, as on a standby
		u.RawQuery = q.Encode()
		cfg.DatabaseURL = u.String()
	})

	res := b.post(`{"path":"/x","postIn":"1h","data":{}}`)

	res.requireError(t, http.StatusServiceUnavailable, "unavailable")
	require.Equal(t, "5", res.header.Get("Retry-After"))
	require.Contains(t, b.logs.String(), "SQLSTATE 25006", "the access log names the cause")
	list := b.do(http.MethodGet, "/v1/hooks?limit=1", nil)
	require.Equal(t, http.StatusOK, list.status, "reads still work: %s", list.body)
	require.JSONEq(t, `[]`, string(decodeStrict[struct {
		Data json.RawMessage `json:"data"`
		Meta json.RawMessage `json:"meta"`
	}](t, list.body).Data))
}

// pgProxy forwards TCP connections to PostgreSQL until cut.
type pgProxy struct {
	t      *testing.T
	addr   string // the proxy's, kept across down and up
	target string

	mu    sync.Mutex
	l     net.Listener
	conns []net.Conn
}

// start listens on a free port and returns dbURL with that port.
func (p *pgProxy) start(dbURL string) string {
	u, err := url.Parse(dbURL)
	require.NoError(p.t, err)
	p.target = u.Host
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(p.t, err)
	p.addr = l.Addr().String()
	p.serve(l)
	p.t.Cleanup(p.down)
	u.Host = p.addr
	return u.String()
}

func (p *pgProxy) serve(l net.Listener) {
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var d net.Dialer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s, err := d.DialContext(ctx, "tcp", p.target)
			cancel()
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
		}
	}()
}

// down refuses new connections and cuts the open ones.
func (p *pgProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		_ = p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// up listens again on the same address.
func (p *pgProxy) up() {
	l, err := net.Listen("tcp", p.addr)
	require.NoError(p.t, err)
	p.serve(l)
}

// A page also ends at the byte budget (hooklist.MaxPageBytes, 4 MiB),
// however high the limit, and the cursor continues after it: every hook
// is listed once. 6 hooks of 1,000,000 bytes of data fit four to a page.
func TestListPagesEndAtTheByteBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	data := `{"blob":"` + strings.Repeat("x", 1_000_000) + `"}`
	created := map[string]bool{}
	for range 6 {
		res := b.post(`{"path":"/big","postAt":"2099-01-01T00:00:00Z","data":` + data + `}`)
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
		created[res.hook(t).ID] = true
	}
	seen := map[string]bool{}
	var sizes []int
	query := "limit=1000"
	for range 10 {
		res, page := b.list(query)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Equal(t, int64(6), page.Meta.TotalItems)
		sizes = append(sizes, len(page.Data))
		for _, h := range page.Data {
			require.False(t, seen[h.ID], "hook %s listed twice", h.ID)
			seen[h.ID] = true
			require.Len(t, h.Data, len(data))
		}
		if page.Meta.NextCursor == nil {
			break
		}
		query = "limit=1000&cursor=" + url.QueryEscape(*page.Meta.NextCursor)
	}
	require.Equal(t, []int{4, 2}, sizes)
	require.Equal(t, created, seen)
}

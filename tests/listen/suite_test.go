package listen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	sundial "github.com/sundial-run/sundial/sdk"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/cli"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	https "github.com/sundial-run/sundial/testkit/receiver"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
	"github.com/sundial-run/sundial/tests/internal/listenstate"
	"github.com/sundial-run/sundial/tests/internal/proc"
	"github.com/sundial-run/sundial/tests/internal/tcpproxy"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// binaries are the services and the `sundial` command, built once for all
// the tests of the run.
var binaries = proc.Binaries{Packages: []string{
	"github.com/sundial-run/sundial/services/gateway/cmd/gateway",
	"github.com/sundial-run/sundial/services/scheduler/cmd/scheduler",
	"github.com/sundial-run/sundial/services/dispatcher/cmd/dispatcher",
	"github.com/sundial-run/sundial/cmd/sundial",
}}

// options shape a suite.
type options struct {
	// gateways is how many gateway replicas run behind the proxy (default 1).
	gateways int
}

// bundle is Sundial as processes, one project whose domain is an HTTPS
// receiver that must see nothing while a listener is connected, and a
// proxy between the listeners (and the API clients) and the gateways.
type bundle struct {
	env      map[string]string
	domain   *arrivals
	local    *localServer
	proxy    *tcpproxy.Proxy
	gateways []*proc.Process
	// direct is the last gateway's own address, for the API calls of the
	// tests themselves: the proxy is the listener's network, which some
	// tests cut, and the first gateway is the one some tests kill.
	direct  string
	project gateway.Credentials
	http    *http.Client
	db      *pgxpool.Pool
}

func setup(t *testing.T, opts options) *bundle {
	t.Helper()
	binaries.Use(t)
	if opts.gateways == 0 {
		opts.gateways = 1
	}
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{})
	b := &bundle{
		domain: &arrivals{},
		local:  newLocalServer(t),
		http:   &http.Client{Timeout: 30 * time.Second},
	}
	domain := https.StartT(t, http.HandlerFunc(b.domain.record), https.Options{})
	addrs := make([]string, opts.gateways)
	for i := range addrs {
		addrs[i] = freeAddr(t)
	}
	b.proxy = tcpproxy.New(t, addrs...)
	b.direct = "http://" + addrs[len(addrs)-1]
	b.db = pgPool(t, dbURL)
	b.env = map[string]string{
		"SUNDIAL_DATABASE_URL":            dbURL,
		"SUNDIAL_SECRET_KEYS":             secrettest.Keys,
		"SUNDIAL_NATS_URL":                ns.ClientURL(),
		"SUNDIAL_GATEWAY_ADMIN_ADDR":      "127.0.0.1:0",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":    "127.0.0.1:0",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR":   "127.0.0.1:0",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":     "127.0.0.1:0",
		"SUNDIAL_PUBLIC_URL":              b.apiURL(),
		"SUNDIAL_DELIVERY_ALLOW_PRIVATE":  "true",
		"SUNDIAL_DELIVERY_CA_FILE":        https.CAFile(t),
		"SUNDIAL_LEASE_DURATION":          "30s",
		"SUNDIAL_SCHEDULER_POLL_INTERVAL": "50ms",
		// Five suites of three processes run side by side, beside other
		// packages, against one PostgreSQL whose max_connections may be
		// the default 100: small pools (each scheduler adds two LISTEN
		// connections of its own).
		"SUNDIAL_DATABASE_MAX_CONNS": "3",
		"SUNDIAL_SHUTDOWN_TIMEOUT":   "5s",
		"SUNDIAL_LOG_LEVEL":          "warn",
	}
	creds, err := gateway.CreateProject(context.Background(), gateway.Database{URL: dbURL, SecretKeys: secrettest.Keys}, "listen", domain.Addr())
	require.NoError(t, err)
	b.project = creds
	b.liftLimits(t)
	for _, addr := range addrs {
		b.gateways = append(b.gateways, b.startGateway(t, addr))
	}
	b.start(t, "scheduler", nil)
	b.start(t, "dispatcher", nil)
	return b
}

// apiURL is the gateways' address as clients see it: through the proxy.
func (b *bundle) apiURL() string { return "http://" + b.proxy.Addr() }

// liftLimits raises the project's rate limit so that the tests create
// hooks as fast as the gateway takes them.
func (b *bundle) liftLimits(t *testing.T) {
	t.Helper()
	var out strings.Builder
	env := cli.Env{Stdout: &out, Stderr: &out, Lookup: envconf.Map(b.env)}
	code := cli.Run(context.Background(), []string{"admin", "set-plan", "--project", b.project.ProjectID,
		"--rate-limit", "100000", "--rate-burst", "100000"}, env)
	require.Equal(t, cli.ExitOK, code, "set-plan: %s", out.String())
}

func (b *bundle) start(t *testing.T, name string, extra map[string]string, args ...string) *proc.Process {
	t.Helper()
	return proc.Start(t, name, binaries.Path(t, name), []map[string]string{b.env, extra}, args...)
}

// startGateway runs `gateway serve` on addr and waits until it answers.
func (b *bundle) startGateway(t *testing.T, addr string) *proc.Process {
	t.Helper()
	p := b.start(t, "gateway", map[string]string{"SUNDIAL_HTTP_ADDR": addr}, "serve")
	require.Eventually(t, func() bool {
		resp, err := b.http.Get("http://" + addr + "/v1/openapi.json")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 20*time.Millisecond, "the gateway never answered on %s", addr)
	return p
}

// api is a client of the last gateway as the project.
func (b *bundle) api() apiclient.Client {
	return apiclient.Client{BaseURL: b.direct, APIKey: b.project.APIKey, HTTP: b.http}
}

// listen starts `sundial listen` with the project's key, forwarding to the
// local server.
func (b *bundle) listen(t *testing.T) *proc.Process {
	t.Helper()
	return b.listenWith(t, b.project.APIKey, b.local.URL())
}

// listenTo starts `sundial listen` forwarding to forwardTo.
func (b *bundle) listenTo(t *testing.T, forwardTo string) *proc.Process {
	t.Helper()
	return b.listenWith(t, b.project.APIKey, forwardTo)
}

// listenWith starts `sundial listen --forward-to forwardTo --output json`
// with apiKey, through the proxy, and waits until the project has one more
// socket connected than before.
func (b *bundle) listenWith(t *testing.T, apiKey, forwardTo string) *proc.Process {
	t.Helper()
	before := b.sockets(t)
	p := b.start(t, "sundial", map[string]string{
		"SUNDIAL_API_URL": b.apiURL(),
		"SUNDIAL_API_KEY": apiKey,
		"HOME":            t.TempDir(),
		"XDG_CONFIG_HOME": t.TempDir(),
	}, "listen", "--forward-to", forwardTo, "--output", "json")
	require.Eventually(t, func() bool { return b.sockets(t) > before }, 30*time.Second, 20*time.Millisecond,
		"the listener never connected")
	return p
}

// hook is the API's view of a hook, as far as these tests look at it.
type hook struct {
	ID           string    `json:"id"`
	Status       string    `json:"status"`
	Attempts     int       `json:"attempts"`
	PostAt       time.Time `json:"postAt"`
	FailureError string    `json:"failureError"`
}

// schedule creates a hook due at postAt with the given path and retry
// override (nil: the project's).
func (b *bundle) schedule(t *testing.T, path string, postAt time.Time, retry map[string]any) hook {
	t.Helper()
	req := map[string]any{
		"path":   path,
		"postAt": postAt.UTC().Format(time.RFC3339Nano),
		"data":   map[string]any{"path": path},
	}
	if retry != nil {
		req["retryOverride"] = retry
	}
	return apiclient.Schedule[hook](t, b.api(), req)
}

// get reads a hook.
func (b *bundle) get(t *testing.T, id string) hook {
	t.Helper()
	resp, raw := b.api().Do(t, http.MethodGet, "/v1/hooks/"+id, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/hooks/%s: %s", id, raw)
	var out struct{ Data hook }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

// attempt is one row of a hook's attempt history.
type attempt struct {
	Attempt int    `json:"attempt"`
	Outcome string `json:"outcome"`
	Error   string `json:"error"`
}

// attempts lists a hook's attempts.
func (b *bundle) attempts(t *testing.T, id string) []attempt {
	t.Helper()
	resp, raw := b.api().Do(t, http.MethodGet, "/v1/hooks/"+id+"/attempts", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET attempts: %s", raw)
	var out struct{ Data []attempt }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

// waitStatus waits until the hook has the status.
func (b *bundle) waitStatus(t *testing.T, id, status string, within time.Duration) hook {
	t.Helper()
	var h hook
	require.Eventually(t, func() bool {
		h = b.get(t, id)
		return h.Status == status
	}, within, 50*time.Millisecond, "hook %s never became %s", id, status)
	return h
}

// completed counts the project's completed hooks.
func (b *bundle) completed(t *testing.T) int {
	t.Helper()
	resp, raw := b.api().Do(t, http.MethodGet, "/v1/hooks?status=completed&limit=1", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/hooks: %s", raw)
	var out struct {
		Meta struct {
			TotalItems int `json:"totalItems"`
		}
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Meta.TotalItems
}

// held counts the project's hooks held by its listener's resume window.
func (b *bundle) held(t *testing.T) int {
	t.Helper()
	n, err := listenstate.New(b.db).HeldHooks(context.Background(), uuid.MustParse(b.project.ProjectID))
	require.NoError(t, err)
	return int(n)
}

// sockets counts the listener sockets the gateways report for the project
// (the presence rows of connected gateways).
func (b *bundle) sockets(t *testing.T) int {
	t.Helper()
	n, err := listenstate.New(b.db).ConnectedSockets(context.Background(), uuid.MustParse(b.project.ProjectID))
	require.NoError(t, err)
	return int(n)
}

// pgPool connects to the suite's database for the listener's state.
func pgPool(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// freeAddr returns a loopback address free now, for a gateway to bind
// later, on a port from lowPorts.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		port := lowPorts + rand.IntN(lowPortCount)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		return addr
	}
	require.FailNow(t, "no free port below the ephemeral range in 100 tries")
	return ""
}

// Ports freeAddr picks from: below the kernel's ephemeral range (32768 and
// up on Linux, 49152 and up on macOS), where no port taken with :0 lands.
// The gateway binds its address only once its process starts, and a port
// found free with :0 could meanwhile go to another test's server taking
// one with :0: a NATS server of a package beside this one did, and the
// gateway failed with "bind: address already in use" (make test,
// 2026-11-28). Here only another address picked this way can collide, one
// chance in 12,000 a pick.
const (
	lowPorts     = 20000
	lowPortCount = 12000
)

// arrival is one request a server received.
type arrival struct {
	ID     string
	Path   string
	At     time.Time
	Header http.Header
	Body   []byte
}

// verify checks an arrival's signature with the project's signing key.
func verify(signingKey string, a arrival) error {
	return sundial.Verify([]string{signingKey}, a.Header, a.Body, 5*time.Minute)
}

// arrivals records requests, in the order they came.
type arrivals struct {
	mu  sync.Mutex
	all []arrival
}

func (a *arrivals) add(r *http.Request) arrival {
	body, _ := io.ReadAll(r.Body)
	v := arrival{ID: r.Header.Get("Sundial-Id"), Path: r.URL.Path, At: time.Now(), Header: r.Header.Clone(), Body: body}
	a.mu.Lock()
	a.all = append(a.all, v)
	a.mu.Unlock()
	return v
}

func (a *arrivals) record(w http.ResponseWriter, r *http.Request) {
	a.add(r)
	w.WriteHeader(http.StatusOK)
}

func (a *arrivals) list() []arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]arrival(nil), a.all...)
}

// of returns the arrivals of one hook.
func (a *arrivals) of(id string) []arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []arrival
	for _, v := range a.all {
		if v.ID == id {
			out = append(out, v)
		}
	}
	return out
}

// only returns the one arrival of a hook, failing if there were others.
func (a *arrivals) only(t *testing.T, id string) arrival {
	t.Helper()
	got := a.of(id)
	require.Len(t, got, 1, "arrivals of hook %s", id)
	return got[0]
}

func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.all)
}

// localServer is the developer's server that `sundial listen` forwards
// to: plain HTTP on localhost. Its answer to each request is chosen by the
// test (answer); by default 200.
type localServer struct {
	arrivals
	srv *httptest.Server

	mu     sync.Mutex
	answer func(a arrival, nth int) (status int, header http.Header, wait time.Duration)
	seen   map[string]int
}

func newLocalServer(t *testing.T) *localServer {
	t.Helper()
	l := &localServer{seen: map[string]int{}}
	l.srv = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(l.srv.Close)
	return l
}

// URL is where the listener forwards to.
func (l *localServer) URL() string { return l.srv.URL }

// setAnswer chooses the answers from now on; nth counts the arrivals of
// the same hook, from 1.
func (l *localServer) setAnswer(f func(a arrival, nth int) (int, http.Header, time.Duration)) {
	l.mu.Lock()
	l.answer = f
	l.mu.Unlock()
}

func (l *localServer) serve(w http.ResponseWriter, r *http.Request) {
	a := l.add(r)
	l.mu.Lock()
	l.seen[a.ID]++
	nth, answer := l.seen[a.ID], l.answer
	l.mu.Unlock()
	status, header, wait := http.StatusOK, http.Header(nil), time.Duration(0)
	if answer != nil {
		status, header, wait = answer(a, nth)
	}
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-r.Context().Done():
		}
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	_, _ = fmt.Fprint(w, `{"ok":true}`)
}

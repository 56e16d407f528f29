package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/cli"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
	"github.com/sundial-run/sundial/tests/internal/proc"
	"github.com/sundial-run/sundial/tests/internal/recorder"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// binaries are the processes of the suite, built once per run: the
// services without the race detector, and nats-server at the version the
// test kit embeds (the module's main package).
var binaries = proc.Binaries{Packages: []string{
	"github.com/sundial-run/sundial/services/gateway/cmd/gateway",
	"github.com/sundial-run/sundial/services/scheduler/cmd/scheduler",
	"github.com/sundial-run/sundial/services/dispatcher/cmd/dispatcher",
	"github.com/nats-io/nats-server/v2",
}}

// bundle is Sundial on a NATS cluster: one project delivering to one
// recording receiver through a gateway process; tests start schedulers
// and dispatchers.
type bundle struct {
	nats     *natsCluster
	receiver *recorder.Receiver
	env      map[string]string
	api      apiclient.Client

	mu       sync.Mutex
	accepted map[string]time.Time
}

// hook is the API's view of a hook, as far as this suite looks at it.
type hook struct {
	ID     string    `json:"id"`
	PostAt time.Time `json:"postAt"`
}

func setup(t *testing.T) *bundle {
	t.Helper()
	dbURL := pgtest.NewDB(t)
	rcv := recorder.Start(t, 0)
	b := &bundle{
		nats:     startNATS(t),
		receiver: rcv,
		accepted: map[string]time.Time{},
	}
	b.env = map[string]string{
		"SUNDIAL_DATABASE_URL":           dbURL,
		"SUNDIAL_SECRET_KEYS":            secrettest.Keys,
		"SUNDIAL_NATS_URL":               b.nats.URL(),
		"SUNDIAL_STREAM_REPLICAS":        "3",
		"SUNDIAL_DELIVERY_ALLOW_PRIVATE": "true",
		"SUNDIAL_DELIVERY_CA_FILE":       rcv.CAFile,
		// The production lease: a NATS outage of seconds must not make
		// the scheduler re-drive work that is merely waiting.
		"SUNDIAL_LEASE_DURATION":          "30s",
		"SUNDIAL_SCHEDULER_POLL_INTERVAL": "100ms",
		// The shared test server allows 100 connections for everyone.
		"SUNDIAL_DATABASE_MAX_CONNS": "4",
		"SUNDIAL_SHUTDOWN_TIMEOUT":   "5s",
		"SUNDIAL_LOG_LEVEL":          "warn",
		// Several of each service on one machine: any free admin port.
		"SUNDIAL_GATEWAY_ADMIN_ADDR":    "127.0.0.1:0",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":  "127.0.0.1:0",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR": "127.0.0.1:0",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":   "127.0.0.1:0",
	}
	creds, err := gateway.CreateProject(context.Background(), gateway.Database{URL: dbURL, SecretKeys: secrettest.Keys},
		"cluster", rcv.Domain())
	require.NoError(t, err)
	b.liftRateLimit(t, creds.ProjectID)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	t.Cleanup(transport.CloseIdleConnections)
	b.api = apiclient.Client{APIKey: creds.APIKey, HTTP: &http.Client{Transport: transport, Timeout: 30 * time.Second}}
	b.startGateway(t)
	return b
}

// liftRateLimit raises the project's per-key rate limit (default 100/s),
// so that hooks are created as fast as the gateway takes them.
func (b *bundle) liftRateLimit(t *testing.T, projectID string) {
	t.Helper()
	var out strings.Builder
	env := cli.Env{Stdout: &out, Stderr: &out, Lookup: envconf.Map(b.env)}
	code := cli.Run(context.Background(),
		[]string{"admin", "set-plan", "--project", projectID, "--rate-limit", "100000", "--rate-burst", "100000"}, env)
	require.Equal(t, cli.ExitOK, code, "set-plan: %s", out.String())
}

// start runs a service's binary on the suite's environment plus extra.
func (b *bundle) start(t *testing.T, name string, extra map[string]string, args ...string) *proc.Process {
	t.Helper()
	return proc.Start(t, name, binaries.Path(t, name), []map[string]string{b.env, extra}, args...)
}

// startGateway runs `gateway serve` on a free port and waits until it
// answers.
func (b *bundle) startGateway(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	b.start(t, "gateway", map[string]string{"SUNDIAL_HTTP_ADDR": addr, "SUNDIAL_DATABASE_MAX_CONNS": "12"}, "serve")
	b.api.BaseURL = "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := b.api.HTTP.Get(b.api.BaseURL + "/v1/openapi.json")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 50*time.Millisecond, "the gateway process never answered on %s", addr)
}

// createAll creates n hooks, req(i) the i-th, through `workers`
// concurrent clients, and records those answered 201; any other answer
// fails the test.
func (b *bundle) createAll(t *testing.T, n, workers int, req func(i int) map[string]any) {
	t.Helper()
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := b.create(req(i)); err != nil {
					errs <- fmt.Errorf("hook %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating hooks: %v", err)
	}
}

func (b *bundle) create(req map[string]any) error {
	resp, raw, err := b.api.Send(http.MethodPost, "/v1/hooks", req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST /v1/hooks answered %d: %s", resp.StatusCode, raw)
	}
	var out struct{ Data hook }
	if err := json.Unmarshal(raw, &out); err != nil || out.Data.ID == "" {
		return fmt.Errorf("201 without a hook: %s", raw)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.accepted[out.Data.ID] = out.Data.PostAt
	return nil
}

// completed counts the project's completed hooks.
func (b *bundle) completed(t *testing.T) int {
	t.Helper()
	resp, raw := b.api.Do(t, http.MethodGet, "/v1/hooks?status=completed&limit=1", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/hooks: %s", raw)
	var out struct {
		Meta struct {
			TotalItems int `json:"totalItems"`
		}
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Meta.TotalItems
}

// acceptedHooks is a copy of the hooks the API accepted.
func (b *bundle) acceptedHooks() map[string]time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]time.Time, len(b.accepted))
	for id, at := range b.accepted {
		out[id] = at
	}
	return out
}

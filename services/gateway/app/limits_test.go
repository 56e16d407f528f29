package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/natstest"
)

const limitsHook = `{"path":"/a","data":{"n":1},"postIn":"1m"}`

// setupWithNATS is setup that also returns the gateway's JetStream.
func setupWithNATS(t *testing.T) (bundle, jetstream.JetStream) {
	t.Helper()
	var natsURL string
	b := setup(t, func(c *app.Config) { natsURL = c.NATSURL })
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return b, js
}

func TestQuotaAndRateLimitHeadersOnEveryAuthenticatedResponse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.post(limitsHook).hook(t).ID
	for _, res := range []response{
		b.do(http.MethodGet, "/v1/hooks/"+id, nil),
		b.do(http.MethodGet, "/v1/hooks/"+uuid.NewString(), nil),
		b.do(http.MethodGet, "/v1/hooks?limit=1", nil),
		b.post(`{"path":"/a"}`),
		b.do(http.MethodDelete, "/v1/hooks/"+id, nil),
	} {
		require.Equal(t, "100000", res.header.Get("Sundial-HookQuota-Limit"), string(res.body))
		require.Equal(t, "1", res.header.Get("Sundial-HookQuota-Usage"), "deleting a hook gives nothing back")
		require.Equal(t, "99999", res.header.Get("Sundial-HookQuota-Remaining"))
		require.NotEmpty(t, res.header.Get("Sundial-HookQuota-Resets-At"))
		require.Equal(t, "200", res.header.Get("RateLimit-Limit"))
		require.NotEmpty(t, res.header.Get("RateLimit-Remaining"))
		require.NotEmpty(t, res.header.Get("RateLimit-Reset"))
	}
	res := b.do(http.MethodGet, "/v1/hooks/"+id, nil, header("X-API-Key", ""))
	require.Equal(t, http.StatusUnauthorized, res.status)
	require.Empty(t, res.header.Get("Sundial-HookQuota-Limit"), "only authenticated responses")
	require.Empty(t, res.header.Get("RateLimit-Limit"))
}

func TestTheRateLimitIsAPlanSettingOfTheProject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	projectID := uuid.MustParse(b.creds.ProjectID)
	require.NoError(t, quota.SetRateLimit(b.ctx, b.q, projectID, quota.RateLimit{PerSecond: 1, Burst: 2}))
	for i := range 2 {
		res := b.post(limitsHook)
		require.Equal(t, http.StatusCreated, res.status, "request %d of the burst", i+1)
		require.Equal(t, "2", res.header.Get("RateLimit-Limit"))
	}
	// At one token a second, some of ten more requests made at once find
	// the bucket empty (all of them, unless the machine stalls).
	var refused []response
	for range 10 {
		if res := b.post(limitsHook); res.status == http.StatusTooManyRequests {
			refused = append(refused, res)
		}
	}
	require.NotEmpty(t, refused)
	for _, res := range refused {
		res.requireError(t, http.StatusTooManyRequests, "rate_limited")
		require.Equal(t, "1", res.header.Get("Retry-After"))
		require.Equal(t, "0", res.header.Get("RateLimit-Remaining"))
		require.NotEmpty(t, res.header.Get("Sundial-HookQuota-Usage"))
	}
}

func TestIdempotencyKeyOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := header("Idempotency-Key", "order-42")
	first := b.post(limitsHook, key)
	require.Equal(t, http.StatusCreated, first.status)
	again := b.post(`{ "path": "/a", "data": {"n": 1}, "postIn": "1m" }`, key)
	require.Equal(t, http.StatusCreated, again.status, "the same request, written differently")
	require.Equal(t, first.hook(t).ID, again.hook(t).ID)
	require.Equal(t, "1", again.header.Get("Sundial-HookQuota-Usage"), "counted once")

	b.post(`{"path":"/b","data":{},"postIn":"1m"}`, key).requireError(t, http.StatusConflict, "conflict", "Idempotency-Key")
	require.NotEqual(t, first.hook(t).ID, b.post(limitsHook, header("Idempotency-Key", "order-43")).hook(t).ID)

	for _, bad := range []string{strings.Repeat("k", 256), "caf\u00e9"} {
		b.post(limitsHook, header("Idempotency-Key", bad)).requireError(t, http.StatusBadRequest, "invalid_request", "Idempotency-Key")
	}
}

// secondGateway starts another gateway on the same database and NATS as
// b's (configured like it with cfg), and returns b aimed at it.
func (b bundle) secondGateway(cfg app.Config) bundle {
	b.t.Helper()
	a, err := app.New(b.ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	require.NoError(b.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	b.t.Cleanup(func() {
		cancel()
		require.NoError(b.t, <-done)
	})
	// Closed before the gateway stops (cleanups run last-registered first).
	b.t.Cleanup(b.raw.Transport.(*http.Transport).CloseIdleConnections)
	b.base = "http://" + a.Addr()
	return b
}

// storedAlerts lists the project's rows in the alerts table (the outbox).
func (b bundle) storedAlerts() []storetest.ListAlertsForTestRow {
	b.t.Helper()
	rows, err := b.tq.ListAlertsForTest(b.ctx, uuid.MustParse(b.creds.ProjectID))
	require.NoError(b.t, err)
	return rows
}

// Two gateways creating hooks at once past 75, 100 and 150 % of the quota
// store one alert per threshold and publish one event per threshold.
func TestThresholdAlertsArePublishedOnceEach(t *testing.T) {
	t.Parallel()
	var cfg app.Config
	b := setup(t, func(c *app.Config) { cfg = *c })
	nc, err := nats.Connect(cfg.NATSURL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	gateways := []bundle{b, b.secondGateway(cfg)}
	setPlan(b, 8, 200) // alerts at 6, 8 and 12 hooks; hard cap 16
	var wg sync.WaitGroup
	statuses := make(chan int, 20)
	for i := range 20 {
		wg.Go(func() { statuses <- gateways[i%2].post(limitsHook).status })
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	require.Equal(t, map[int]int{http.StatusCreated: 16, http.StatusTooManyRequests: 4}, count)

	var stored []string
	for _, row := range b.storedAlerts() {
		require.Equal(t, "quota.threshold", row.Kind)
		var a eventv1.Alert
		require.NoError(t, proto.Unmarshal(row.Body, &a))
		require.Equal(t, row.ID, a.GetAlertId())
		stored = append(stored, strconv.Itoa(int(a.GetThresholdPercent())))
	}
	require.ElementsMatch(t, []string{"75", "100", "150"}, stored, "one alert row per threshold")

	stream, err := js.Stream(b.ctx, event.StreamAlerts)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := stream.Info(b.ctx)
		return err == nil && info.State.Msgs == 3
	}, 10*time.Second, 10*time.Millisecond)
	var got []string
	for seq := uint64(1); seq <= 3; seq++ {
		msg, err := stream.GetMsg(b.ctx, seq)
		require.NoError(t, err)
		var a eventv1.Alert
		require.NoError(t, proto.Unmarshal(msg.Data, &a))
		require.Equal(t, b.creds.ProjectID, a.GetProjectId())
		got = append(got, strconv.Itoa(int(a.GetThresholdPercent())))
		require.True(t, strings.HasPrefix(a.GetAlertId(), fmt.Sprintf("quota:%s:", b.creds.ProjectID)), a.GetAlertId())
		require.Equal(t, event.MsgID(event.KindAlert, a.GetAlertId(), 0), msg.Header.Get(jetstream.MsgIDHeader))
	}
	require.ElementsMatch(t, []string{"75", "100", "150"}, got)
	require.Never(t, func() bool {
		info, err := stream.Info(b.ctx)
		return err != nil || info.State.Msgs != 3
	}, 500*time.Millisecond, 50*time.Millisecond, "no event twice")
}

// With NATS gone, the alert is still stored with the claim: the notifier's
// sweeper sends it without its event.
func TestThresholdAlertsAreStoredWhenNATSIsDown(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t, natstest.Options{})
	b := setup(t, func(c *app.Config) { c.NATSURL = ns.ClientURL() })
	setPlan(b, 4, 200) // alerts at 3, 4 and 6 hooks
	ns.Shutdown()
	ns.WaitForShutdown()
	for range 3 {
		require.Equal(t, http.StatusCreated, b.post(limitsHook).status)
	}
	rows := b.storedAlerts()
	require.Len(t, rows, 1)
	require.True(t, strings.HasSuffix(rows[0].ID, ":75"), rows[0].ID)
	require.NotContains(t, b.logs.String(), "quota alert published", "NATS is down")
}

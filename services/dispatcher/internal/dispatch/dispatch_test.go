package dispatch_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/services/dispatcher/internal/report"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	pool     *pgxpool.Pool
	js       jetstream.JetStream
	nats     *natstest.Server
	receiver *fixture.Receiver
	client   *delivery.Client
	reader   *sdkmetric.ManualReader
	handler  *dispatch.Handler
}

func setup(t *testing.T, answer http.HandlerFunc) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	require.NoError(t, event.EnsureStreams(context.Background(), js, event.DefaultReplicas))
	receiver := fixture.StartReceiver(t, answer)
	roots, err := egress.LoadRoots(fixture.CAFile(t, receiver))
	require.NoError(t, err)
	client, err := delivery.NewClient(delivery.Options{
		Timeout: 5 * time.Second, ExcerptBytes: 1024, HeaderPrefix: "Sundial", UserAgent: "Sundial/test",
		RootCAs: roots, Guard: egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	b := bundle{pool: pool, js: js, nats: srv, receiver: receiver, client: client, reader: sdkmetric.NewManualReader()}
	b.handler = b.newHandler(t, js, report.DefaultRetry)
	return b
}

// sender publishes on js with retry, as the dispatcher's results and
// hand-backs go.
func sender(js jetstream.JetStream, retry bus.RetryPolicy) bus.Retrying {
	return bus.Retrying{
		Publisher:     bus.NewPublisher(js),
		Retry:         retry,
		EnsureStreams: func(ctx context.Context) error { return event.EnsureStreams(ctx, js, event.DefaultReplicas) },
	}
}

// runReporter returns a result batcher publishing with send, running until
// the test ends.
func runReporter(t *testing.T, send bus.Retrying) *report.Batcher {
	t.Helper()
	return runReporterWith(t, send, report.BatchConfig{MaxBatch: 16})
}

// runReporterWith is runReporter with batches of cfg.
func runReporterWith(t *testing.T, send bus.Retrying, cfg report.BatchConfig) *report.Batcher {
	t.Helper()
	r, err := report.NewBatcher(cfg, send)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func (b bundle) newHandler(t *testing.T, js jetstream.JetStream, retry bus.RetryPolicy) *dispatch.Handler {
	return b.newHandlerWith(t, js, retry, b.client)
}

// newHandlerWith is newHandler with to in place of the bundle's client.
func (b bundle) newHandlerWith(t *testing.T, js jetstream.JetStream, retry bus.RetryPolicy, to dispatch.Sender) *dispatch.Handler {
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(b.reader)).Meter(dispatch.MeterName)
	send := sender(js, retry)
	return dispatch.NewHandler(dispatch.Config{
		Credentials: credential.NewCache(credential.NewStore(b.pool, secrettest.Keyring()), time.Minute, 100),
		Sender:      to,
		Results:     runReporter(t, send),
		HandBack:    send,
		Log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics:     dispatch.NewMetrics(meter),
		// The sender's limit (5 s above) is the delivery timeout.
		DeliveryTimeout: 5 * time.Second,
	})
}

func (b bundle) dueHook(t *testing.T, p fixture.Project) *eventv1.DueHook {
	t.Helper()
	projectID := fixture.InsertProject(t, b.pool, p)
	return fixture.DueHook(projectID, b.receiver.URL+"/hooks/x?y=1", "/hooks/x?y=1")
}

func (b bundle) handle(t *testing.T, h *dispatch.Handler, due *eventv1.DueHook) error {
	t.Helper()
	return h.Handle(context.Background(), fixture.Due(t, due))
}

func signature(key, ts string, body []byte) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(ts + "." + string(body)))
	return "v1," + hex.EncodeToString(h.Sum(nil))
}

func TestHandleDeliversAndPublishesTheResult(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["X-Trace"] = []string{"a", "b"}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	due := b.dueHook(t, fixture.Project{ActiveKey: "whsec_one"})
	require.NoError(t, b.handle(t, b.handler, due))

	got := b.receiver.Received()
	require.Len(t, got, 1)
	req := got[0]
	require.Equal(t, "/hooks/x", req.Path)
	require.Equal(t, due.GetHookId(), req.Header.Get("Sundial-Id"))
	require.Equal(t, signature("whsec_one", req.Header.Get("Sundial-Timestamp"), req.Body), req.Header.Get("Sundial-Signature"))
	require.Empty(t, req.Header.Values("Authorization"))
	require.Contains(t, string(req.Body), `"data":{"b": 1,  "a": "<tag> & more", "n": [1, 2.50]}`)

	res := fixture.LastResult(t, b.js)
	require.NotNil(t, res)
	require.Equal(t, event.TypeAttemptResults, res.Type, "a batch, even of one")
	require.Equal(t, event.ResultsMsgID([]string{due.GetHookId()}, []int64{7}), res.MsgID)
	require.Equal(t, due.GetHookId(), res.GetHookId())
	require.Equal(t, due.GetProjectId(), res.GetProjectId())
	require.EqualValues(t, 2, res.GetAttempt())
	require.EqualValues(t, 7, res.GetLeaseSeq())
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.GetOutcome())
	require.EqualValues(t, 201, res.GetStatusCode())
	require.Empty(t, res.GetError())
	require.Equal(t, `{"ok":true}`, res.GetResponseExcerpt())
	require.Positive(t, res.GetDuration().AsDuration())
	require.WithinDuration(t, time.Now(), res.GetStartedAt().AsTime(), time.Minute)
	// Both sides' headers travel with the result (package delivery
	// records them).
	sent := map[string][]string{}
	for _, f := range res.GetRequestHeaders().GetFields() {
		sent[f.GetName()] = f.GetValues()
	}
	require.Equal(t, []string{req.Header.Get("Sundial-Signature")}, sent["Sundial-Signature"])
	require.Equal(t, []string{"application/json"}, sent["Content-Type"])
	answered := map[string][]string{}
	for _, f := range res.GetResponseHeaders().GetFields() {
		answered[f.GetName()] = f.GetValues()
	}
	require.Equal(t, []string{"a", "b"}, answered["X-Trace"])
}

func TestHandleSignsWithActiveAndLiveRetiringKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	due := b.dueHook(t, fixture.Project{
		ActiveKey: "whsec_new",
		Retiring: []fixture.Key{
			{Secret: "whsec_old", ExpiresIn: time.Hour},
			{Secret: "whsec_gone", ExpiresIn: -time.Minute},
		},
		Authorization: "Bearer receiver-secret",
	})
	require.NoError(t, b.handle(t, b.handler, due))

	req := b.receiver.Received()[0]
	ts := req.Header.Get("Sundial-Timestamp")
	entries := strings.Split(req.Header.Get("Sundial-Signature"), " ")
	require.Equal(t, []string{signature("whsec_new", ts, req.Body), signature("whsec_old", ts, req.Body)}, entries)
	require.Equal(t, "Bearer receiver-secret", req.Header.Get("Authorization"))
	// The attempt records that an Authorization was sent, not its value.
	for _, f := range fixture.LastResult(t, b.js).GetRequestHeaders().GetFields() {
		if f.GetName() == "Authorization" {
			require.Equal(t, []string{"[redacted]"}, f.GetValues())
			return
		}
	}
	t.Fatal("no Authorization recorded")
}

func TestHandleReportsAFailedAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "database down", http.StatusInternalServerError)
	})
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	require.NoError(t, b.handle(t, b.handler, due))

	res := fixture.LastResult(t, b.js)
	require.NotNil(t, res)
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.GetOutcome())
	require.Equal(t, "HTTP 500", res.GetError())
	require.EqualValues(t, 500, res.GetStatusCode())
	require.Equal(t, "database down\n", res.GetResponseExcerpt())
}

func TestHandleSkipsAnExpiredLease(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	due.LeaseExpiresAt = timestamppb.New(time.Now().Add(-time.Second))
	require.NoError(t, b.handle(t, b.handler, due))
	require.Empty(t, b.receiver.Received())
	require.Nil(t, fixture.LastResult(t, b.js))
}

func TestHandleSkipsALeaseThatCouldEndMidDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	cases := []struct {
		name    string
		lease   time.Duration // the whole lease; 0: an older scheduler's message
		left    time.Duration
		deliver bool
	}{
		// A 30 s lease needs the 5 s timeout plus the 2 s result margin left.
		{"30s lease, 20s left", 30 * time.Second, 20 * time.Second, true},
		{"30s lease, 5s left", 30 * time.Second, 5 * time.Second, false},
		// A short lease needs only half of itself left.
		{"3s lease, 2s left", 3 * time.Second, 2 * time.Second, true},
		{"3s lease, 1s left", 3 * time.Second, time.Second, false},
		// Without the lease's length only expiry counts.
		{"unknown lease, 1s left", 0, time.Second, true},
	}
	for _, c := range cases {
		due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
		due.LeaseExpiresAt = timestamppb.New(time.Now().Add(c.left))
		if c.lease > 0 {
			due.LeaseDuration = durationpb.New(c.lease)
		}
		require.NoError(t, b.handle(t, b.handler, due), c.name)
		delivered := false
		for _, r := range b.receiver.Received() {
			delivered = delivered || r.Header.Get("Sundial-Id") == due.GetHookId()
		}
		require.Equal(t, c.deliver, delivered, c.name)
	}
}

func TestHandleSkipsAProjectThatIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	due := fixture.DueHook(uuid.New(), b.receiver.URL+"/x", "/x")
	require.NoError(t, b.handle(t, b.handler, due))
	require.Empty(t, b.receiver.Received())
	require.Nil(t, fixture.LastResult(t, b.js))
}

func TestHandleFailsAnAttemptWithoutASigningKey(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	due := b.dueHook(t, fixture.Project{})
	require.NoError(t, b.handle(t, b.handler, due))
	require.Empty(t, b.receiver.Received())
	res := fixture.LastResult(t, b.js)
	require.NotNil(t, res)
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.GetOutcome())
	require.Equal(t, "project has no active signing key", res.GetError())
}

func TestHandleDropsMalformedMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	projectID := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "k"})
	noLease := fixture.DueHook(projectID, b.receiver.URL+"/x", "/x")
	noLease.LeaseExpiresAt = nil
	badID := fixture.DueHook(projectID, b.receiver.URL+"/x", "/x")
	badID.HookId = "not-a-uuid"
	noData := fixture.DueHook(projectID, b.receiver.URL+"/x", "/x")
	noData.Data = nil

	garbage := fixture.Due(t)
	garbage.Data = []byte("\xff\xff\xff not protobuf")
	// A well-formed hook alone, not in a DueHooks: no type, or the single
	// type no publisher sends. Neither is read, so neither is delivered.
	alone := fixture.Due(t)
	alone.Data = fixture.Encode(t, fixture.DueHook(projectID, b.receiver.URL+"/x", "/x"))
	typedAlone := alone
	typedAlone.Header = nats.Header{event.TypeHeader: []string{"sundial.event.v1.DueHook"}}
	untyped := fixture.Due(t, fixture.DueHook(projectID, b.receiver.URL+"/x", "/x"))
	untyped.Header = nats.Header{}
	alone.Header = nats.Header{}

	dropType := bus.Drop(io.EOF)
	for name, d := range map[string]bus.Delivery{
		"garbage":          garbage,
		"no lease":         fixture.Due(t, noLease),
		"bad id":           fixture.Due(t, badID),
		"no data":          fixture.Due(t, noData),
		"a hook alone":     alone,
		"a typed hook":     typedAlone,
		"a batch, no type": untyped,
	} {
		err := b.handler.Handle(context.Background(), d)
		require.Error(t, err, name)
		require.IsType(t, dropType, err, name)
	}
	require.Empty(t, b.receiver.Received())
}

func TestHandleGivesUpPublishingWithoutRedelivering(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	nc, js := b.nats.Connect(t)
	nc.Close() // every publish now fails at once
	h := b.newHandler(t, js, bus.RetryPolicy{Tries: 3, Backoff: time.Millisecond, Timeout: time.Second})

	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	// nil: a redelivered DueHook would deliver the hook a second time.
	require.NoError(t, b.handle(t, h, due))
	require.Len(t, b.receiver.Received(), 1)
	require.Nil(t, fixture.LastResult(t, b.js))
}

func TestHandleRecreatesAVanishedResultsStream(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	require.NoError(t, b.js.DeleteStream(context.Background(), event.StreamResults))
	h := b.newHandler(t, b.js, bus.RetryPolicy{Tries: 3, Backoff: time.Millisecond, Timeout: 5 * time.Second})

	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	require.NoError(t, b.handle(t, h, due))
	res := fixture.LastResult(t, b.js)
	require.NotNil(t, res)
	require.Equal(t, due.GetHookId(), res.GetHookId())
}

func TestHandleCountsDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	require.NoError(t, b.handle(t, b.handler, b.dueHook(t, fixture.Project{ActiveKey: "k"})))
	require.NoError(t, b.handle(t, b.handler, b.dueHook(t, fixture.Project{ActiveKey: "k"})))

	var rm metricdata.ResourceMetrics
	require.NoError(t, b.reader.Collect(context.Background(), &rm))
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = true
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				switch m.Name {
				case "sundial.dispatcher.deliveries":
					require.Len(t, data.DataPoints, 1)
					require.EqualValues(t, 2, data.DataPoints[0].Value)
					outcome, _ := data.DataPoints[0].Attributes.Value("outcome")
					require.Equal(t, "success", outcome.AsString())
				case "sundial.dispatcher.slots.open":
					require.EqualValues(t, dispatch.DefaultConcurrency, data.DataPoints[0].Value, "no hook waited: Concurrency open")
				default:
					// Nothing in flight now, and no deferral (a counter
					// exported at 0 from the start).
					require.Zero(t, data.DataPoints[0].Value, m.Name)
				}
			case metricdata.Histogram[float64]:
				require.EqualValues(t, 2, data.DataPoints[0].Count)
			}
		}
	}
	require.Equal(t, map[string]bool{
		"sundial.dispatcher.deliveries":           true,
		"sundial.dispatcher.delivery.duration":    true,
		"sundial.dispatcher.deliveries.in_flight": true,
		"sundial.dispatcher.deferrals":            true,
		"sundial.dispatcher.slots.open":           true,
	}, found)
}

func TestHandleReportsAndCountsTheFailureClass(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) })
	require.NoError(t, b.handle(t, b.handler, b.dueHook(t, fixture.Project{ActiveKey: "k"})))
	res := fixture.LastResult(t, b.js)
	require.NotNil(t, res)
	require.Equal(t, eventv1.FailureClass_FAILURE_CLASS_GONE, res.GetFailureClass())

	var rm metricdata.ResourceMetrics
	require.NoError(t, b.reader.Collect(context.Background(), &rm))
	var counted bool
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if data, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "sundial.dispatcher.deliveries" {
				require.Len(t, data.DataPoints, 1)
				class, _ := data.DataPoints[0].Attributes.Value("failure_class")
				outcome, _ := data.DataPoints[0].Attributes.Value("outcome")
				require.Equal(t, "410", class.AsString())
				require.Equal(t, "failure", outcome.AsString())
				counted = true
			}
		}
	}
	require.True(t, counted)
}

package api_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/gateway/internal/api"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/channel"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/ratelimit"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

type testBundle struct {
	t       *testing.T
	server  *httptest.Server
	q       *storetest.Queries
	nats    *natstest.Server
	js      jetstream.JetStream
	logs    *logtest.Buffer
	project project.Created
	channel uuid.UUID
}

// setupSendTest serves the channel routes with a send test that waits
// wait, on NATS of the test's own, with one chat channel.
func setupSendTest(t *testing.T, wait time.Duration) testBundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)
	ns := natstest.Start(t, natstest.Options{})
	_, js := ns.Connect(t)
	require.NoError(t, event.EnsureStreams(t.Context(), js, event.DefaultReplicas))
	q := store.New(pool)
	logs := &logtest.Buffer{}
	channels := channel.NewService(pool, bus.NewPublisher(js), secrettest.Keyring())
	handler := api.New(api.Deps{
		Config:   api.Config{HeaderPrefix: "Sundial", MaxDataBytes: 1024},
		Log:      slog.New(slog.NewJSONHandler(logs, nil)),
		Keys:     apikey.NewVerifier(q),
		Limits:   api.LimitsDeps{Reader: quota.NewReader(q), Rate: ratelimit.New(ratelimit.Options{})},
		Channels: api.ChannelDeps{Channels: channels, TestWait: wait},
	})
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	c, err := channels.Create(t.Context(), created.ID, channel.CreateRequest{
		Name: ptr("Ops"), Type: ptr("chat"), URL: ptr("https://chat.example.com/hooks/token"),
	})
	require.NoError(t, err)
	return testBundle{t: t, server: server, q: storetest.New(pool), nats: ns, js: js, logs: logs, project: created, channel: c.ID}
}

func ptr[T any](v T) *T { return &v }

type testAnswer struct {
	status int
	data   struct {
		Outcome         string   `json:"outcome"`
		DurationSeconds *float64 `json:"durationSeconds"`
		Error           string   `json:"error"`
		AlertID         string   `json:"alertId"`
	}
}

func (b testBundle) test(id string) testAnswer {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodPost, b.server.URL+"/v1/channels/"+id+"/test", nil)
	require.NoError(b.t, err)
	req.Header.Set("X-API-Key", b.project.APIKey)
	res, err := contract.Client(b.t).Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	a := testAnswer{status: res.StatusCode}
	if res.StatusCode < 300 {
		var body struct {
			Data json.RawMessage `json:"data"`
		}
		require.NoError(b.t, json.Unmarshal(raw, &body), string(raw))
		require.NoError(b.t, json.Unmarshal(body.Data, &a.data), string(raw))
	}
	return a
}

// playNotifier records the first try of the send test's alert, once it is
// stored, as the notifier would; it reports its error on the channel.
func (b testBundle) playNotifier(outcome string, errText *string) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(10 * time.Second)
			for {
				alerts, err := b.q.ListAlertsForTest(b.t.Context(), b.project.ID)
				if err != nil {
					return err
				}
				if len(alerts) > 0 {
					return b.recordFirstTry(alerts[0].ID, outcome, errText)
				}
				select {
				case <-deadline:
					return errors.New("no send test alert within 10 s")
				case <-tick.C:
				}
			}
		}()
	}()
	return done
}

func (b testBundle) recordFirstTry(alertID, outcome string, errText *string) error {
	ctx := b.t.Context()
	group := uuid.New()
	target := b.channel.String() // the notifier names a channel target by its id
	steps := []func() error{
		func() error {
			return b.q.InsertAlertGroupForTest(ctx, storetest.InsertAlertGroupForTestParams{
				ID: group, ProjectID: b.project.ID, Kind: channel.TestKind, ChannelID: &b.channel,
			})
		},
		func() error {
			return b.q.SetAlertGroupForTest(ctx, storetest.SetAlertGroupForTestParams{ID: alertID, GroupID: &group})
		},
		func() error {
			return b.q.InsertAlertSendForTest(ctx, storetest.InsertAlertSendForTestParams{
				GroupID: group, Target: target, ChannelID: &b.channel, State: outcome, Attempts: 1,
			})
		},
		func() error {
			return b.q.InsertAlertSendAttemptForTest(ctx, storetest.InsertAlertSendAttemptForTestParams{
				GroupID: group, Target: target, Attempt: 1, ChannelID: &b.channel, StartedAt: time.Now(),
				DurationSeconds: 0.5, Outcome: outcome, Error: errText,
			})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func TestSendTestIsPendingWhenNoTryFinishesInTime(t *testing.T) {
	t.Parallel()
	b := setupSendTest(t, 300*time.Millisecond)
	a := b.test(b.channel.String())
	require.Equal(t, http.StatusAccepted, a.status)
	require.Equal(t, channel.OutcomePending, a.data.Outcome)
	require.True(t, strings.HasPrefix(a.data.AlertID, "channel.test:"), a.data.AlertID)

	alerts, err := b.q.ListAlertsForTest(t.Context(), b.project.ID)
	require.NoError(t, err)
	require.Len(t, alerts, 1)
	require.Equal(t, a.data.AlertID, alerts[0].ID)
	require.Equal(t, channel.TestKind, alerts[0].Kind)
	require.Nil(t, alerts[0].GroupID, "waiting for the notifier")
	stream, err := b.js.Stream(t.Context(), event.StreamAlerts)
	require.NoError(t, err)
	info, err := stream.Info(t.Context())
	require.NoError(t, err)
	require.Equal(t, uint64(1), info.State.Msgs, "the event was published")
}

func TestSendTestAnswersSentWithTheTry(t *testing.T) {
	t.Parallel()
	b := setupSendTest(t, 10*time.Second)
	played := b.playNotifier(channel.OutcomeSent, nil)
	a := b.test(b.channel.String())
	require.NoError(t, <-played)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, channel.OutcomeSent, a.data.Outcome)
	require.NotNil(t, a.data.DurationSeconds)
	require.InDelta(t, 0.5, *a.data.DurationSeconds, 1e-9)
	require.Empty(t, a.data.Error)
	require.Empty(t, a.data.AlertID)
}

func TestSendTestStoresTheAlertWhenNATSIsDown(t *testing.T) {
	t.Parallel()
	b := setupSendTest(t, 300*time.Millisecond)
	b.nats.Shutdown()
	b.nats.WaitForShutdown()
	a := b.test(b.channel.String())
	require.Equal(t, http.StatusAccepted, a.status, "not an error for the user: the sweeper takes the alert in")
	alerts, err := b.q.ListAlertsForTest(t.Context(), b.project.ID)
	require.NoError(t, err)
	require.Len(t, alerts, 1)
	require.Contains(t, b.logs.String(), "send test event not published")
	require.Contains(t, b.logs.String(), a.data.AlertID)
}

func TestSendTestOfAnUnknownChannelIsNotFound(t *testing.T) {
	t.Parallel()
	b := setupSendTest(t, 300*time.Millisecond)
	require.Equal(t, http.StatusNotFound, b.test(uuid.NewString()).status)
	require.Equal(t, http.StatusNotFound, b.test("not-a-uuid").status)
	alerts, err := b.q.ListAlertsForTest(t.Context(), b.project.ID)
	require.NoError(t, err)
	require.Empty(t, alerts, "nothing queued")
}

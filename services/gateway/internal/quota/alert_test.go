package quota_test

import (
	"context"
	"errors"
	"github.com/sundial-run/sundial/testkit/logtest"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/testkit/natstest"
)

type alertBundle struct {
	t      *testing.T
	ctx    context.Context
	nats   *natstest.Server
	js     jetstream.JetStream
	alerts *quota.Alerts
	logs   *logtest.Buffer
}

// setupAlerts starts NATS (with the streams unless bare) and an Alerts that
// is not running yet.
func setupAlerts(t *testing.T, bare bool, drainTimeout time.Duration) alertBundle {
	t.Helper()
	ns := natstest.Start(t, natstest.Options{})
	_, js := ns.Connect(t)
	if !bare {
		require.NoError(t, event.EnsureStreams(t.Context(), js, event.DefaultReplicas))
	}
	logs := &logtest.Buffer{}
	alerts, err := quota.NewAlerts(js, event.DefaultReplicas, slog.New(slog.NewJSONHandler(logs, nil)), drainTimeout)
	require.NoError(t, err)
	return alertBundle{t: t, ctx: t.Context(), nats: ns, js: js, alerts: alerts, logs: logs}
}

// run runs the Alerts until the returned function stops it and waits.
func (b alertBundle) run() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		b.alerts.Run(ctx)
		close(done)
	}()
	stop = func() {
		cancel()
		<-done
	}
	b.t.Cleanup(stop)
	return stop
}

func (b alertBundle) stored() []*jetstream.RawStreamMsg {
	b.t.Helper()
	s, err := b.js.Stream(b.ctx, event.StreamAlerts)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	require.NoError(b.t, err)
	info, err := s.Info(b.ctx)
	require.NoError(b.t, err)
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		msg, err := s.GetMsg(b.ctx, seq)
		require.NoError(b.t, err)
		out = append(out, msg)
	}
	return out
}

func crossing(pct int32) quota.Crossing {
	return quota.Crossing{
		ProjectID:   uuid.MustParse("0190a3c4-6f1e-7c2b-9d3e-1a2b3c4d5e6f"),
		Percent:     pct,
		Used:        75,
		Quota:       100,
		PeriodStart: time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC),
		At:          time.Date(2030, 3, 20, 8, 30, 0, 0, time.UTC),
	}
}

func TestAlertIDs(t *testing.T) {
	t.Parallel()
	c := crossing(75)
	require.Equal(t, "quota:0190a3c4-6f1e-7c2b-9d3e-1a2b3c4d5e6f:2030-03-01T00:00:00Z:75", c.AlertID())
	require.Equal(t, event.MsgID(event.KindAlert, c.AlertID(), 0), c.MsgID())
	c.PeriodStart = c.PeriodStart.In(time.FixedZone("x", 3600))
	require.Equal(t, crossing(75).AlertID(), c.AlertID(), "the period start is written in UTC")
	require.NotEqual(t, c.AlertID(), crossing(100).AlertID())
}

func TestAnAlertIsPublishedWithItsFields(t *testing.T) {
	t.Parallel()
	b := setupAlerts(t, false, time.Second)
	b.run()
	c := crossing(75)
	b.alerts.Announce(b.ctx, []quota.Crossing{c})
	require.Eventually(t, func() bool { return len(b.stored()) == 1 }, 10*time.Second, 10*time.Millisecond)

	msg := b.stored()[0]
	require.Equal(t, event.SubjectAlert, msg.Subject)
	require.Equal(t, c.MsgID(), msg.Header.Get(jetstream.MsgIDHeader))
	var got eventv1.Alert
	require.NoError(t, proto.Unmarshal(msg.Data, &got))
	require.Equal(t, c.AlertID(), got.GetAlertId())
	require.Equal(t, eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD, got.GetKind())
	require.Equal(t, c.ProjectID.String(), got.GetProjectId())
	require.Equal(t, int32(75), got.GetThresholdPercent())
	require.Equal(t, int64(75), got.GetUsage())
	require.Equal(t, int64(100), got.GetQuota())
	require.True(t, c.PeriodStart.Equal(got.GetPeriodStart().AsTime()))
	require.True(t, c.At.Equal(got.GetOccurredAt().AsTime()))
}

func TestARepeatedPublishIsStoredOnce(t *testing.T) {
	t.Parallel()
	b := setupAlerts(t, false, time.Second)
	b.run()
	b.alerts.Announce(b.ctx, []quota.Crossing{crossing(75), crossing(75), crossing(100)})
	require.Eventually(t, func() bool {
		return strings.Count(b.logs.String(), "quota alert published") == 3
	}, 10*time.Second, 10*time.Millisecond)
	stored := b.stored()
	require.Len(t, stored, 2, "the Nats-Msg-Id deduplicates the repeat")
}

func TestStreamsAreCreatedWhenMissing(t *testing.T) {
	t.Parallel()
	b := setupAlerts(t, true, time.Second)
	b.run()
	b.alerts.Announce(b.ctx, []quota.Crossing{crossing(150)})
	require.Eventually(t, func() bool { return len(b.stored()) == 1 }, 10*time.Second, 10*time.Millisecond)
}

func TestQueuedAlertsArePublishedAtShutdown(t *testing.T) {
	t.Parallel()
	b := setupAlerts(t, false, 10*time.Second)
	b.alerts.Announce(b.ctx, []quota.Crossing{crossing(75), crossing(100), crossing(150)})
	stop := b.run()
	stop()
	require.Len(t, b.stored(), 3)
}

func TestAnAlertThatCannotBePublishedIsLoggedAsLost(t *testing.T) {
	t.Parallel()
	b := setupAlerts(t, false, 200*time.Millisecond)
	b.nats.Shutdown()
	b.nats.WaitForShutdown()
	b.alerts.Announce(b.ctx, []quota.Crossing{crossing(75)})
	stop := b.run()
	stop() // returns once the drain timeout has cut the retries short
	logs := b.logs.String()
	require.Contains(t, logs, `"level":"ERROR","msg":"quota alert event not published: publish failed"`)
	require.Contains(t, logs, crossing(75).AlertID())
}

func TestAFullQueueLosesAlertsLoudly(t *testing.T) {
	t.Parallel()
	b := setupAlerts(t, false, time.Second)
	many := make([]quota.Crossing, 1025)
	for i := range many {
		many[i] = crossing(75)
	}
	b.alerts.Announce(b.ctx, many)
	require.Equal(t, 1, strings.Count(b.logs.String(), "quota alert event not published: queue full"))
}

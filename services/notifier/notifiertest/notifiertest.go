// Package notifiertest prepares notifier tests, in this module and in the
// repository's tests module (tests/crash): it writes projects, channels,
// failed hooks and alerts through the notifier's store as the gateway and
// the scheduler do in production, reads back what the notifier recorded,
// and runs a TLS chat receiver. Only tests import it.
package notifiertest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/notifier/internal/store"
	"github.com/sundial-run/sundial/services/notifier/internal/storetest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// DB writes and reads a test database.
type DB struct {
	Pool *pgxpool.Pool
	q    *store.Queries
	tq   *storetest.Queries
}

// Open connects to dbURL for the test's lifetime.
func Open(t testing.TB, dbURL string) *DB {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return &DB{Pool: pool, q: store.New(pool), tq: storetest.New(pool)}
}

// Project is what a test project looks like.
type Project struct {
	// GroupWait, FollowupMin and FollowupMax are whole seconds.
	GroupWait, FollowupMin, FollowupMax time.Duration
	Owners                              []string
}

// Project inserts a project and returns its id.
func (db *DB) Project(t testing.TB, p Project) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	if p.Owners == nil {
		p.Owners = []string{}
	}
	if p.FollowupMax == 0 {
		p.FollowupMax = 24 * time.Hour
	}
	err := db.tq.InsertProjectForTest(context.Background(), storetest.InsertProjectForTestParams{
		ID: id, Name: "notifier test", Domain: "example.com",
		GroupWaitSecs:   int32(p.GroupWait / time.Second),
		FollowupMinSecs: int32(p.FollowupMin / time.Second),
		FollowupMaxSecs: int32(p.FollowupMax / time.Second),
		OwnerEmails:     p.Owners,
	})
	require.NoError(t, err)
	return id
}

// ChatChannel adds an enabled chat channel posting to url that receives
// events (all kinds when none) and returns its id.
func (db *DB) ChatChannel(t testing.TB, project uuid.UUID, url string, events ...string) uuid.UUID {
	t.Helper()
	cfg, err := json.Marshal(channelconfig.Chat{URL: url})
	require.NoError(t, err)
	return db.Channel(t, project, channelconfig.KindChat, cfg, true, events...)
}

// Channel adds a channel and returns its id.
func (db *DB) Channel(t testing.TB, project uuid.UUID, kind string, cfg json.RawMessage, enabled bool, events ...string) uuid.UUID {
	t.Helper()
	if len(events) == 0 {
		events = channelconfig.Events
	}
	id := uuid.Must(uuid.NewV7())
	sealed, err := secrettest.Keyring().Seal(secretbox.Label(secretbox.ChannelConfig, id), cfg)
	require.NoError(t, err)
	require.NoError(t, db.tq.InsertChannelForTest(context.Background(), storetest.InsertChannelForTestParams{
		ID: id, ProjectID: project, Name: kind + " channel", Kind: kind, ConfigSealed: sealed, Events: events, Enabled: enabled,
	}))
	return id
}

// FailedHook inserts a hook whose retries ran out and returns its
// hook.failed alert, not yet produced.
func (db *DB) FailedHook(t testing.TB, project uuid.UUID, path string) *eventv1.Alert {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	require.NoError(t, db.tq.InsertFailedHookForTest(context.Background(), storetest.InsertFailedHookForTestParams{
		ID: id, ProjectID: project, Path: path, Domain: "example.com",
	}))
	return &eventv1.Alert{
		AlertId:    fmt.Sprintf("hook.failed:%s:1", id),
		Kind:       eventv1.AlertKind_ALERT_KIND_HOOK_FAILED,
		ProjectId:  project.String(),
		OccurredAt: timestamppb.Now(),
		HookId:     id.String(),
		Domain:     "example.com",
		Path:       path,
		Error:      "HTTP 500",
		Attempts:   6,
	}
}

// Recovered is an endpoint.recovered alert of the project.
func Recovered(project uuid.UUID, path string) *eventv1.Alert {
	return &eventv1.Alert{
		AlertId:    fmt.Sprintf("endpoint.recovered:%s:%s", project, uuid.NewString()),
		Kind:       eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED,
		ProjectId:  project.String(),
		OccurredAt: timestamppb.Now(),
		Domain:     "example.com",
		Path:       path,
	}
}

// Quota is a quota.threshold alert of the project.
func Quota(project uuid.UUID, percent int32) *eventv1.Alert {
	period := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	return &eventv1.Alert{
		AlertId:          fmt.Sprintf("quota:%s:%s:%d", project, period.Format("2006-01"), percent),
		Kind:             eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD,
		ProjectId:        project.String(),
		OccurredAt:       timestamppb.Now(),
		ThresholdPercent: percent,
		Usage:            int64(percent) * 1000,
		Quota:            100_000,
		PeriodStart:      timestamppb.New(period),
	}
}

// Store writes the alert into the outbox, as its producer does in the
// transaction that caused it.
func (db *DB) Store(t testing.TB, a *eventv1.Alert) {
	t.Helper()
	body, err := proto.Marshal(a)
	require.NoError(t, err)
	kind := map[eventv1.AlertKind]string{
		eventv1.AlertKind_ALERT_KIND_HOOK_FAILED:        "hook.failed",
		eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED: "endpoint.recovered",
		eventv1.AlertKind_ALERT_KIND_ENDPOINT_PAUSED:    "endpoint.paused",
		eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD:    "quota.threshold",
		eventv1.AlertKind_ALERT_KIND_CHANNEL_TEST:       "channel.test",
	}[a.GetKind()]
	require.NoError(t, db.q.InsertAlert(context.Background(), store.InsertAlertParams{
		ID: a.GetAlertId(), Kind: kind, Body: body, OccurredAt: a.GetOccurredAt().AsTime(),
		ProjectID: uuid.MustParse(a.GetProjectId()),
	}))
}

// Publish publishes the alert's event; seq > 0 makes a distinct NATS
// message of the same alert (a redelivery that NATS cannot deduplicate).
// It retries as a producer does: on a loaded machine JetStream's answer to
// a publish has been seen to time out ("no response from stream"), and
// the message id makes a retry of a publish that landed a no-op.
func Publish(t testing.TB, js jetstream.JetStream, a *eventv1.Alert, seq int64) {
	t.Helper()
	pub := bus.Retrying{Publisher: bus.NewPublisher(js),
		Retry: bus.RetryPolicy{Tries: 5, Backoff: 100 * time.Millisecond, Timeout: 10 * time.Second}}
	require.NoError(t, pub.Publish(context.Background(), bus.Message{
		Subject: event.SubjectAlert,
		MsgID:   event.MsgID(event.KindAlert, a.GetAlertId(), seq),
		Body:    a,
	}))
}

// Produce stores the alert and publishes its event, as a producer does.
func (db *DB) Produce(t testing.TB, js jetstream.JetStream, a *eventv1.Alert) {
	t.Helper()
	db.Store(t, a)
	Publish(t, js, a, 0)
}

// Notified counts the project's hooks whose wasNotified is true, and all.
func (db *DB) Notified(t testing.TB, project uuid.UUID) (notified, total int64) {
	t.Helper()
	row, err := db.tq.CountNotifiedHooksForTest(context.Background(), project)
	require.NoError(t, err)
	return row.Notified, row.Total
}

// Groups lists the project's alert groups, oldest first.
func (db *DB) Groups(t testing.TB, project uuid.UUID) []storetest.AlertGroup {
	t.Helper()
	rows, err := db.tq.ListGroupsForTest(context.Background(), project)
	require.NoError(t, err)
	return rows
}

// Alerts lists the project's alerts, oldest first.
func (db *DB) Alerts(t testing.TB, project uuid.UUID) []storetest.Alert {
	t.Helper()
	rows, err := db.tq.ListProjectAlertsForTest(context.Background(), project)
	require.NoError(t, err)
	return rows
}

// Sends lists the sends of the project's groups.
func (db *DB) Sends(t testing.TB, project uuid.UUID) []storetest.AlertSend {
	t.Helper()
	rows, err := db.tq.ListSendsForTest(context.Background(), project)
	require.NoError(t, err)
	return rows
}

// Attempts lists the send attempts of the project's groups, oldest first.
func (db *DB) Attempts(t testing.TB, project uuid.UUID) []storetest.AlertSendAttempt {
	t.Helper()
	rows, err := db.tq.ListAttemptsForTest(context.Background(), project)
	require.NoError(t, err)
	return rows
}

// ChannelRow reads a channel, its health among the rest.
func (db *DB) ChannelRow(t testing.TB, id uuid.UUID) storetest.NotificationChannel {
	t.Helper()
	row, err := db.tq.GetChannelForTest(context.Background(), id)
	require.NoError(t, err)
	return row
}

// Followup reads the project's follow-up state.
func (db *DB) Followup(t testing.TB, project uuid.UUID) storetest.AlertFollowup {
	t.Helper()
	row, err := db.tq.GetFollowupForTest(context.Background(), project)
	require.NoError(t, err)
	return row
}

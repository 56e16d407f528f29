package send

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/services/notifier/internal/channel"
	"github.com/sundial-run/sundial/services/notifier/internal/intake"
	"github.com/sundial-run/sundial/services/notifier/internal/message"
	"github.com/sundial-run/sundial/services/notifier/notifiertest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestBackoff(t *testing.T) {
	t.Parallel()
	for attempt, want := range map[int]time.Duration{
		1: 30 * time.Second, 2: time.Minute, 3: 2 * time.Minute, 7: 32 * time.Minute, 8: time.Hour, 100: time.Hour,
	} {
		require.Equal(t, want, Backoff(attempt, 30*time.Second, time.Hour), "attempt %d", attempt)
	}
}

// recorder is a Channel that remembers what it was asked to send and
// answers err.
type recorder struct {
	mu   sync.Mutex
	sent []message.Message
	err  error
}

func (r *recorder) Send(_ context.Context, _ channel.Target, m message.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, m)
	return r.err
}

type bundle struct {
	db      *notifiertest.DB
	project uuid.UUID
	channel uuid.UUID
	rec     *recorder
	worker  *Worker
}

// setup makes a project whose one chat channel has one due send, and a
// Worker with a lease of lease.
func setup(t *testing.T, lease time.Duration) bundle {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDB(t)
	db := notifiertest.Open(t, dbURL)
	project := db.Project(t, notifiertest.Project{})
	ch := db.ChatChannel(t, project, "https://chat.example.com/hooks/token")
	log := slog.New(slog.DiscardHandler)
	ev := notifiertest.Recovered(project, "/x")
	body, err := proto.Marshal(ev)
	require.NoError(t, err)
	a, err := intake.FromEvent(ev, body)
	require.NoError(t, err)
	res, err := intake.New(db.Pool, log, intake.Options{}).TakeIn(ctx, a, "test")
	require.NoError(t, err)
	require.Equal(t, 1, res.Sends, "a group of one goes out at once")
	rec := &recorder{}
	w := New(Config{
		Keys: secrettest.Keyring(),
		Pool: db.Pool, Log: log, Channel: rec, Concurrency: 1, Lease: lease, Timeout: time.Second,
		RetryMin: time.Minute, RetryMax: time.Hour, GiveUp: 24 * time.Hour, DashboardURL: "https://app.example.com",
		ShutdownTimeout: time.Second,
	})
	return bundle{db: db, project: project, channel: ch, rec: rec, worker: w}
}

func TestAClaimTakenOverRecordsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, 200*time.Millisecond)
	ctx := context.Background()
	first, err := b.worker.claim(ctx, 10)
	require.NoError(t, err)
	require.Len(t, first, 1)
	// A second notifier takes the send once the first one's lease ran out.
	var second []claim
	require.Eventually(t, func() bool {
		second, err = b.worker.claim(ctx, 10)
		require.NoError(t, err)
		return len(second) == 1
	}, 10*time.Second, 20*time.Millisecond)
	require.EqualValues(t, 2, second[0].Attempts)

	b.worker.Try(ctx, first[0]) // late: records nothing
	require.Empty(t, b.db.Attempts(t, b.project))
	require.Equal(t, "pending", b.db.Sends(t, b.project)[0].State)

	b.worker.Try(ctx, second[0])
	attempts := b.db.Attempts(t, b.project)
	require.Len(t, attempts, 1)
	require.EqualValues(t, 2, attempts[0].Attempt)
	require.Equal(t, "sent", b.db.Sends(t, b.project)[0].State)
	require.Len(t, b.rec.sent, 2, "both tried: the duplicate a lease expiry allows")
}

func TestAFailedTryIsRetriedLaterAndCounted(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Minute)
	b.rec.err = errors.New("HTTP 503 from chat.example.com")
	ctx := context.Background()
	claims, err := b.worker.claim(ctx, 10)
	require.NoError(t, err)
	require.Len(t, claims, 1)

	b.worker.Try(ctx, claims[0])
	send := b.db.Sends(t, b.project)[0]
	require.Equal(t, "pending", send.State)
	require.Equal(t, "HTTP 503 from chat.example.com", *send.LastError)
	require.Nil(t, send.LeaseExpiresAt)
	// Not due again before the backoff (1 min): nothing to claim.
	again, err := b.worker.claim(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, again)
	health := b.db.ChannelRow(t, b.channel)
	require.EqualValues(t, 1, health.ConsecutiveFailures)
	require.Equal(t, "HTTP 503 from chat.example.com", *health.LastError)
	m := b.rec.sent[0]
	require.Equal(t, message.KindEndpointRecovered, m.Kind)
	require.Equal(t, 1, m.Total)
	require.Len(t, m.Alerts, 1)
	require.Equal(t, "/x", m.Alerts[0].GetPath())
	require.Equal(t, "https://app.example.com", m.DashboardURL)
}

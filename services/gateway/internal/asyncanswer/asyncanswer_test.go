package asyncanswer_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/asyncanswer"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is a Service on a real database, with a connection listening for
// what wakes the schedulers. Hooks are put in the states the scheduler
// would give them with the store's ...ForTest queries.
type bundle struct {
	t       *testing.T
	svc     *asyncanswer.Service
	q       *store.Queries
	tq      *storetest.Queries
	listen  *pgx.Conn
	project uuid.UUID
	secret  []byte
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, dbURL := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)
	q := store.New(pool)
	sealed, err := storetest.New(pool).AsyncSecretForTest(t.Context(), created.ID)
	require.NoError(t, err)
	secret, err := secrettest.Keyring().Open(secretbox.Label(secretbox.ProjectAsyncSecret, created.ID), sealed)
	require.NoError(t, err)
	conn, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	require.NoError(t, storetest.New(conn).ListenAsyncForTest(t.Context()))
	return bundle{t: t, svc: asyncanswer.NewService(pool, secrettest.Keyring()), q: q, tq: storetest.New(pool), listen: conn, project: created.ID, secret: secret}
}

// inFlight returns a hook being delivered under the returned lease.
func (b bundle) inFlight() (uuid.UUID, int64) {
	b.t.Helper()
	hs, err := b.q.InsertHooks(b.t.Context(), store.InsertHooksParams{
		Ids: []string{uuid.Must(uuid.NewV7()).String()}, ProjectIds: []string{b.project.String()}, Paths: []string{"/p"},
		Datas: []string{`{}`}, PostAts: []time.Time{time.Now()}, PostInSeconds: []int64{-1}, RetryOverrides: []string{""},
	})
	require.NoError(b.t, err)
	require.Len(b.t, hs, 1)
	lease, err := b.tq.LeaseHookForTest(b.t.Context(), hs[0].ID)
	require.NoError(b.t, err)
	return hs[0].ID, lease
}

func (b bundle) answer(kind asyncanswer.Kind, id uuid.UUID, lease int64) string {
	b.t.Helper()
	status, err := b.svc.Apply(b.t.Context(), asyncanswer.Answer{
		Kind: kind, HookID: id, Lease: lease, Token: asyncurl.Token(b.secret, id, lease),
	})
	require.NoError(b.t, err)
	return status
}

// woken returns the hook id of the next notification to the schedulers.
func (b bundle) woken() string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.t.Context(), 10*time.Second)
	defer cancel()
	n, err := b.listen.WaitForNotification(ctx)
	require.NoError(b.t, err, "no scheduler woken")
	return n.Payload
}

// TestAnswersWakeTheScheduler: every answer recorded wakes the schedulers
// in its transaction, with the hook to settle, whether the 202 was applied
// or not.
func TestAnswersWakeTheScheduler(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id, lease := b.inFlight()
	require.NoError(t, b.tq.StartWaitForTest(t.Context(), storetest.StartWaitForTestParams{HookID: id, TimeoutSeconds: 300}))
	require.Equal(t, asyncanswer.StatusCompleted, b.answer(asyncanswer.Ack, id, lease))
	require.Equal(t, id.String(), b.woken())

	early, earlyLease := b.inFlight()
	require.Equal(t, asyncanswer.StatusNacked, b.answer(asyncanswer.Nack, early, earlyLease))
	require.Equal(t, early.String(), b.woken(), "an answer before the 202")

	// A repeat records nothing and wakes no one: the next notification is
	// the next answer's.
	require.Equal(t, asyncanswer.StatusCompleted, b.answer(asyncanswer.Ack, id, lease), "a repeat before the scheduler applied the ack")
	next, nextLease := b.inFlight()
	require.Equal(t, asyncanswer.StatusCompleted, b.answer(asyncanswer.Ack, next, nextLease))
	require.Equal(t, next.String(), b.woken())
}

package intake_test

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

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/notifier/internal/intake"
	"github.com/sundial-run/sundial/services/notifier/notifiertest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	db     *notifiertest.DB
	intake *intake.Intake
	// due counts the wake-ups of the closer.
	mu  sync.Mutex
	due int
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{db: notifiertest.Open(t, pgtest.NewDB(t))}
	b.intake = intake.New(b.db.Pool, slog.New(slog.DiscardHandler), intake.Options{GroupsDue: func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.due++
	}})
	return b
}

func (b *bundle) dueCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.due
}

func alertOf(t *testing.T, ev *eventv1.Alert) intake.Alert {
	t.Helper()
	body, err := proto.Marshal(ev)
	require.NoError(t, err)
	a, err := intake.FromEvent(ev, body)
	require.NoError(t, err)
	return a
}

func TestConcurrentFailuresJoinOneGroup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.db.Project(t, notifiertest.Project{GroupWait: time.Hour})
	const n = 30
	alerts := make([]intake.Alert, n)
	for i := range alerts {
		alerts[i] = alertOf(t, b.db.FailedHook(t, project, "/f"))
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, a := range alerts {
		wg.Go(func() {
			_, err := b.intake.TakeIn(context.Background(), a, "test")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	groups := b.db.Groups(t, project)
	require.Len(t, groups, 1)
	require.EqualValues(t, n, groups[0].AlertCount)
	require.Nil(t, groups[0].ClosedAt)
	for _, a := range b.db.Alerts(t, project) {
		require.Equal(t, groups[0].ID, *a.GroupID)
	}
	require.Zero(t, b.dueCount(), "a group due in an hour wakes nobody")
}

func TestTakingAnAlertInTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.db.Project(t, notifiertest.Project{})
	a := alertOf(t, notifiertest.Quota(project, 150))

	first, err := b.intake.TakeIn(context.Background(), a, "test")
	require.NoError(t, err)
	require.False(t, first.Already)
	require.False(t, first.Due, "a group of one needs no closer")
	require.NotNil(t, b.db.Groups(t, project)[0].ClosedAt, "closed as it is made")
	second, err := b.intake.TakeIn(context.Background(), a, "test")
	require.NoError(t, err)
	require.True(t, second.Already)
	require.Equal(t, first.GroupID, second.GroupID)
	require.Len(t, b.db.Groups(t, project), 1)
	require.Len(t, b.db.Alerts(t, project), 1)
	require.Zero(t, b.dueCount())
}

func TestAFailureGroupDueNowWakesTheCloser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.db.Project(t, notifiertest.Project{GroupWait: 0})
	res, err := b.intake.TakeIn(context.Background(), alertOf(t, b.db.FailedHook(t, project, "/now")), "test")
	require.NoError(t, err)
	require.True(t, res.Due)
	require.Equal(t, 1, b.dueCount())
	require.Nil(t, b.db.Groups(t, project)[0].ClosedAt, "the closer closes failure groups")
}

func TestAnAlertOfAGoneProjectIsDropped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gone := uuid.New()
	_, err := b.intake.TakeIn(context.Background(), alertOf(t, notifiertest.Recovered(gone, "/x")), "test")
	require.ErrorIs(t, err, intake.ErrProjectGone)
	require.Empty(t, b.db.Alerts(t, gone))
}

func TestFromEventRejectsWhatCannotBeStored(t *testing.T) {
	t.Parallel()
	project := uuid.New()
	future := notifiertest.Recovered(project, "/x")
	future.Kind = eventv1.AlertKind(42)
	_, err := intake.FromEvent(future, nil)
	require.True(t, errors.Is(err, intake.ErrUnknownKind))

	badProject := notifiertest.Recovered(project, "/x")
	badProject.ProjectId = "p1"
	_, err = intake.FromEvent(badProject, nil)
	require.ErrorContains(t, err, "not a UUID")

	noID := notifiertest.Recovered(project, "/x")
	noID.AlertId = ""
	_, err = intake.FromEvent(noID, nil)
	require.ErrorContains(t, err, "alert_id")
}

func TestSweepTakesInOnlyOldWaitingAlerts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.db.Project(t, notifiertest.Project{})
	for range 5 {
		b.db.Store(t, notifiertest.Recovered(project, "/lost"))
	}

	n, err := b.intake.Sweep(context.Background(), time.Hour, 2, 10)
	require.NoError(t, err)
	require.Zero(t, n, "too young to sweep")
	n, err = b.intake.Sweep(context.Background(), 0, 2, 10)
	require.NoError(t, err)
	require.Equal(t, 5, n, "batches of 2 until none is left")
	for _, a := range b.db.Alerts(t, project) {
		require.NotNil(t, a.GroupID)
	}
	require.Len(t, b.db.Groups(t, project), 5)
}

func TestTakeInAllGroupsABatchAsOneByOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p1 := b.db.Project(t, notifiertest.Project{GroupWait: time.Hour})
	p2 := b.db.Project(t, notifiertest.Project{GroupWait: time.Hour})
	gone := uuid.New()
	quota := alertOf(t, notifiertest.Quota(p1, 150))
	alerts := []intake.Alert{
		alertOf(t, b.db.FailedHook(t, p1, "/a")), alertOf(t, b.db.FailedHook(t, p2, "/a")),
		quota, alertOf(t, b.db.FailedHook(t, p1, "/b")), alertOf(t, notifiertest.Recovered(gone, "/x")),
		alertOf(t, b.db.FailedHook(t, p1, "/c")), quota,
	}

	res, errs := b.intake.TakeInAll(context.Background(), alerts, "test")
	for i, err := range errs {
		if i == 4 {
			require.ErrorIs(t, err, intake.ErrProjectGone)
			continue
		}
		require.NoError(t, err, "alert %d", i)
	}
	require.Equal(t, res[0].GroupID, res[3].GroupID, "a project's failures join its one open group")
	require.Equal(t, res[0].GroupID, res[5].GroupID)
	require.NotEqual(t, res[0].GroupID, res[1].GroupID)
	require.NotEqual(t, res[0].GroupID, res[2].GroupID, "a quota alert is a group of its own")
	require.True(t, res[6].Already, "the same alert twice in a batch is taken in once")
	require.Equal(t, res[2].GroupID, res[6].GroupID)

	counts := map[uuid.UUID]int32{}
	for _, g := range append(b.db.Groups(t, p1), b.db.Groups(t, p2)...) {
		counts[g.ID] = g.AlertCount
	}
	require.Equal(t, map[uuid.UUID]int32{res[0].GroupID: 3, res[1].GroupID: 1, res[2].GroupID: 1}, counts)
	for _, a := range append(b.db.Alerts(t, p1), b.db.Alerts(t, p2)...) {
		require.NotNil(t, a.GroupID)
	}
}

func TestNoAlertsIsNoTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, errs := b.intake.TakeInAll(ctx, nil, "test")
	require.Empty(t, res)
	require.Empty(t, errs, "a sweep that found nothing, at shutdown, has nothing to fail")
	n, err := b.intake.Sweep(ctx, 0, 10, 1)
	require.Error(t, err, "the sweep's read fails on a cancelled context")
	require.Zero(t, n)
}

func TestABatchThatFailsIsTakenInOneByOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.db.Project(t, notifiertest.Project{GroupWait: time.Hour})
	good := alertOf(t, b.db.FailedHook(t, project, "/a"))
	// A kind the alerts table refuses fails the batch's transaction.
	bad := alertOf(t, notifiertest.Recovered(project, "/x"))
	bad.Kind = "not.a.kind"

	res, errs := b.intake.TakeInAll(context.Background(), []intake.Alert{good, bad, alertOf(t, b.db.FailedHook(t, project, "/b"))}, "test")
	require.NoError(t, errs[0])
	require.Error(t, errs[1])
	require.NotErrorIs(t, errs[1], intake.ErrProjectGone)
	require.NoError(t, errs[2])
	require.Equal(t, res[0].GroupID, res[2].GroupID)
	require.Len(t, b.db.Alerts(t, project), 2)
	require.EqualValues(t, 2, b.db.Groups(t, project)[0].AlertCount)
}

func TestTheBatcherTakesConcurrentAlertsInTogether(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.db.Project(t, notifiertest.Project{GroupWait: 0})
	batcher := intake.NewBatcher(b.intake)
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Go(func() { batcher.Run(ctx) })

	const n = 40
	var wg sync.WaitGroup
	results := make(chan intake.Result, n)
	for range n {
		a := alertOf(t, b.db.FailedHook(t, project, "/f"))
		wg.Go(func() {
			res, err := batcher.TakeIn(context.Background(), a, "test")
			if err == nil {
				results <- res
			}
		})
	}
	wg.Wait()
	close(results)
	require.Len(t, results, n, "every alert taken in")
	groups := b.db.Groups(t, project)
	require.Len(t, groups, 1)
	require.EqualValues(t, n, groups[0].AlertCount)
	for res := range results {
		require.Equal(t, groups[0].ID, res.GroupID)
		require.True(t, res.Due)
	}
	require.Positive(t, b.dueCount())

	cancel()
	running.Wait()
	late := alertOf(t, b.db.FailedHook(t, project, "/late"))
	res, err := batcher.TakeIn(context.Background(), late, "test")
	require.NoError(t, err, "once Run has returned, an alert is taken in alone")
	require.Equal(t, groups[0].ID, res.GroupID)
}

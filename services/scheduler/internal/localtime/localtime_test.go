package localtime_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/localtime"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/tztest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const domain = "receiver.example.com"

type bundle struct {
	pool    *pgxpool.Pool
	tq      *storetest.Queries
	project uuid.UUID
	old     *calendar.Zones
	log     *slog.Logger
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	tq := storetest.New(pool)
	project := fixture.Project(t, tq, domain, retry.Policy{MinRetries: 3, DelaySecs: 5,
		Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 60})
	return bundle{pool: pool, tq: tq, project: project, old: tztest.Old(t),
		log: slog.New(slog.NewTextHandler(t.Output(), nil))}
}

// local is a hook the gateway of release zones created for wall in zone.
type local struct {
	wall     string
	zone     string
	zones    *calendar.Zones
	attempts int32
	leased   bool
}

func (b bundle) insert(t *testing.T, l local) storetest.Hook {
	t.Helper()
	wall, err := time.Parse("2006-01-02T15:04:05", l.wall)
	require.NoError(t, err)
	at := wall // a zone the release lacks: any instant will do
	if loc, err := l.zones.Load(l.zone); err == nil {
		at, err = calendar.ResolveLocal(wall, loc)
		require.NoError(t, err)
	}
	var lease *time.Time
	if l.leased {
		lease = new(time.Now().Add(time.Minute))
	}
	h, err := b.tq.InsertLocalTimeHookForTest(context.Background(), storetest.InsertLocalTimeHookForTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: b.project, Domain: domain, PostAt: at,
		PostAtLocal: pgtype.Timestamp{Time: wall, Valid: true}, Timezone: &l.zone, TzVersion: &l.zones.Version,
		Attempts: l.attempts, LeaseExpiresAt: lease,
	})
	require.NoError(t, err)
	return h
}

func TestANewReleaseMovesPendingLocalTimesToTheirWallTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	newer := tztest.New(t)
	// 09:00 in Mexico City on 1 July 2030: 14:00 UTC with summer time
	// (the old release), 15:00 UTC without (the new).
	summer := b.insert(t, local{wall: "2030-07-01T09:00:00", zone: tztest.Zone, zones: b.old})
	require.Equal(t, "2030-07-01T14:00:00Z", summer.PostAt.UTC().Format(time.RFC3339))
	winter := b.insert(t, local{wall: "2030-01-15T09:00:00", zone: tztest.Zone, zones: b.old})
	unknown := b.insert(t, local{wall: "2030-07-01T09:00:00", zone: "Europe/Paris", zones: b.old})
	current := b.insert(t, local{wall: "2030-07-01T09:00:00", zone: tztest.Zone, zones: newer})
	attempted := b.insert(t, local{wall: "2030-07-01T09:00:00", zone: tztest.Zone, zones: b.old, attempts: 1})
	claimed := b.insert(t, local{wall: "2030-07-01T09:00:00", zone: tztest.Zone, zones: b.old, leased: true})
	byInstant := fixture.Insert(t, b.tq, fixture.Hook{ProjectID: b.project, Domain: domain, DueIn: time.Hour})

	r, err := localtime.New(b.pool, localtime.Config{Zones: newer, BatchSize: 2}, b.log)
	require.NoError(t, err)
	pass, err := r.ResolveOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, localtime.Pass{Hooks: localtime.Tally{Resolved: 3, Moved: 1, Unknown: 1, Latest: time.Hour},
		From: []string{tztest.OldVersion}}, pass)

	moved := fixture.Get(t, b.tq, summer.ID)
	require.Equal(t, "2030-07-01T15:00:00Z", moved.PostAt.UTC().Format(time.RFC3339), "09:00 without summer time")
	require.Equal(t, moved.PostAt, *moved.RunAt, "due at its new instant")
	require.Equal(t, tztest.NewVersion, *moved.TzVersion)
	require.True(t, moved.UpdatedAt.After(summer.UpdatedAt))
	kept := fixture.Get(t, b.tq, winter.ID)
	require.Equal(t, winter.PostAt, kept.PostAt, "standard time in both releases")
	require.Equal(t, tztest.NewVersion, *kept.TzVersion)
	require.Equal(t, unknown.PostAt, fixture.Get(t, b.tq, unknown.ID).PostAt, "a zone the release lacks keeps its instant")
	for _, h := range []storetest.Hook{current, attempted, claimed, byInstant} {
		require.Equal(t, h, fixture.Get(t, b.tq, h.ID), "left alone")
	}

	again, err := r.ResolveOnce(context.Background())
	require.NoError(t, err)
	require.Zero(t, again.Hooks.Resolved, "each hook is resolved once per release")
}

func TestAnOlderReleaseMovesNothingBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.insert(t, local{wall: "2030-07-01T09:00:00", zone: tztest.Zone, zones: tztest.New(t)})
	r, err := localtime.New(b.pool, localtime.Config{Zones: b.old}, b.log)
	require.NoError(t, err)
	pass, err := r.ResolveOnce(context.Background())
	require.NoError(t, err)
	require.Zero(t, pass.Hooks.Resolved)
	require.Equal(t, h, fixture.Get(t, b.tq, h.ID))
}

func (b bundle) sequence(t *testing.T, name string, next time.Time, version string) storetest.Sequence {
	t.Helper()
	schedule := `{"frequency":"daily","timezone":"` + tztest.Zone + `","time":{"hour":9,"minute":0}}`
	s, err := b.tq.InsertPlannedSequenceForTest(context.Background(), storetest.InsertPlannedSequenceForTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: b.project, Name: name, Schedule: []byte(schedule),
		StartAt: time.Date(2030, 7, 1, 0, 0, 0, 0, time.UTC), NextRunAt: &next, TzVersion: version,
	})
	require.NoError(t, err)
	return s
}

func TestANewReleasePlansCalendarSequencesAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Daily at 09:00 in Mexico City from 1 July 2030: its first slot is
	// 15:00 UTC without summer time, 14:00 UTC with it (the old release).
	noSummer := time.Date(2030, 7, 1, 15, 0, 0, 0, time.UTC)
	withSummer := noSummer.Add(-time.Hour)
	earlier := b.sequence(t, "planned-before", noSummer, "")
	current := b.sequence(t, "planned-old", withSummer, tztest.OldVersion)

	r, err := localtime.New(b.pool, localtime.Config{Zones: b.old}, b.log)
	require.NoError(t, err)
	pass, err := r.ResolveOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, localtime.Tally{Resolved: 1, Moved: 1, Earliest: -time.Hour}, pass.Sequences)
	got, err := b.tq.GetSequenceForTest(context.Background(), earlier.ID)
	require.NoError(t, err)
	require.Equal(t, withSummer, got.NextRunAt.UTC(), "the slot the new rules put earlier runs then")
	require.Equal(t, tztest.OldVersion, got.TzVersion)
	got, err = b.tq.GetSequenceForTest(context.Background(), current.ID)
	require.NoError(t, err)
	require.Equal(t, current, got, "planned with this release: left alone")

	// Planned with the old release, the next slot moves later under the
	// new one: the planned time stays, and the sequencer's scan then finds
	// the slot where the new rules put it.
	r, err = localtime.New(b.pool, localtime.Config{Zones: tztest.New(t)}, b.log)
	require.NoError(t, err)
	pass, err = r.ResolveOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, localtime.Tally{Resolved: 2, Moved: 2, Latest: time.Hour}, pass.Sequences)
	got, err = b.tq.GetSequenceForTest(context.Background(), current.ID)
	require.NoError(t, err)
	require.Equal(t, withSummer, got.NextRunAt.UTC())
	require.Equal(t, tztest.NewVersion, got.TzVersion)
}

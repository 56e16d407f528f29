package retention_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/scheduler/internal/retention"
	"github.com/sundial-run/sundial/services/scheduler/internal/runstep"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
)

// TestADeletedFinishedStepHookLeavesItsRunAlone: a running run's
// completed step whose hook expired loses the hook, and the sequencer's
// check for steps whose hook is gone (runstep.FailVanished, which fails
// only pending steps) finds nothing to fail; the pending step, whose hook
// is older still, keeps its hook.
func TestADeletedFinishedStepHookLeavesItsRunAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	project := b.project(t, 1, 90)
	done := b.hook(t, project, "completed", 2*day)
	waiting := b.hook(t, project, "pending", 100*day)
	run := b.run(t, project, map[string]uuid.UUID{"done": done}, map[string]uuid.UUID{"waiting": waiting})

	p, err := b.cleaner(t, retention.Config{Pause: 0}).CleanOnce(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Hooks)
	require.Equal(t, []uuid.UUID{waiting}, b.existing(t, []uuid.UUID{done, waiting}))

	var failed int
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		failed, _, err = runstep.FailVanished(ctx, store.New(tx), 100)
		return err
	}))
	require.Zero(t, failed)
	steps, err := b.tq.ListRunStepsForTest(ctx, run)
	require.NoError(t, err)
	got := map[string]string{}
	for _, s := range steps {
		got[s.Name] = s.Status
	}
	require.Equal(t, map[string]string{"done": "completed", "waiting": "pending"}, got)
	r, err := b.tq.GetRunForTest(ctx, run)
	require.NoError(t, err)
	require.Equal(t, "running", r.Status)
}

// run makes a running run of a new sequence with a completed step per
// hook of completed and a pending one per hook of pending.
func (b bundle) run(t *testing.T, project uuid.UUID, completed, pending map[string]uuid.UUID) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	seq, err := b.tq.InsertSequenceForTest(ctx, storetest.InsertSequenceForTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: project, Name: "nightly",
		Schedule: json.RawMessage(`{"every":"1d"}`), Steps: json.RawMessage(`[]`),
		StartInSeconds: 3600, CatchUp: "latest", Overlap: "allow",
	})
	require.NoError(t, err)
	run := uuid.Must(uuid.NewV7())
	require.NoError(t, b.tq.InsertRunForTest(ctx, storetest.InsertRunForTestParams{
		ID: run, ProjectID: project, SequenceID: seq.ID, Slot: time.Now().Add(-day)}))
	for status, steps := range map[string]map[string]uuid.UUID{"completed": completed, "pending": pending} {
		for name, hook := range steps {
			require.NoError(t, b.tq.InsertRunStepForTest(ctx, storetest.InsertRunStepForTestParams{
				RunID: run, Name: name, HookID: &hook, Status: status}))
		}
	}
	return run
}

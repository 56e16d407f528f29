package sequencer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/sequencer"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
)

const twoSteps = `[{"name": "a", "path": "/a", "data": {}}, {"name": "b", "path": "/b", "data": {}, "dependsOn": ["a"]}]`

// ahead scans once with a sequencer that writes runs ahead by the default
// lead.
func (b bundle) ahead(t *testing.T) {
	t.Helper()
	more, err := sequencer.New(b.pool, sequencer.Config{}, b.log).ScanOnce(context.Background())
	require.NoError(t, err)
	require.False(t, more)
}

// used is the project's count of hooks in its periods.
func (b bundle) used(t *testing.T) int64 {
	t.Helper()
	n, err := b.tq.UsedForTest(context.Background(), b.project)
	require.NoError(t, err)
	return n
}

// claimedAt waits until the scheduler's claim leases h, and returns the
// database's clock right after that claim.
func (b bundle) claimedAt(t *testing.T, h storetest.Hook) time.Time {
	t.Helper()
	var at time.Time
	require.Eventually(t, func() bool {
		_, err := b.claimer.ClaimOnce(context.Background())
		require.NoError(t, err)
		at = fixture.DBNow(t, b.tq)
		return fixture.Get(t, b.tq, h.ID).LeaseExpiresAt != nil
	}, 20*time.Second, 50*time.Millisecond)
	return at
}

// TestARunIsWrittenAheadOfItsSlot: a slot within the lead has its run
// written at once, started at the slot, with its root step's hook due at
// the slot (counted in the quota) and its dependent waiting; the hook is
// not claimed before the slot, and the sequence moves to the slot after.
func TestARunIsWrittenAheadOfItsSlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: 3 * time.Second, steps: twoSteps})
	slot := seq.StartAt

	b.ahead(t)

	runs := b.runs(t, seq)
	require.Equal(t, []string{"running"}, statuses(runs))
	run := runs[0]
	require.True(t, run.Slot.Equal(slot))
	require.True(t, run.StartedAt.Equal(slot), "started at the slot, not when written: %v", run.StartedAt)
	require.Equal(t, map[string]string{"a": "pending", "b": "waiting"}, b.steps(t, run.ID))
	hooks := b.hooks(t, run.ID)
	require.Len(t, hooks, 1)
	root := hooks["a"]
	require.True(t, root.PostAt.Equal(slot), "postAt %v", root.PostAt)
	require.True(t, root.RunAt.Equal(slot), "due at the slot: %v", root.RunAt)
	require.EqualValues(t, 1, b.used(t))
	row := b.sequenceRow(t, seq)
	require.True(t, row.NextRunAt.Equal(slot.Add(time.Minute)))
	require.NotNil(t, row.PreparedSlot)
	require.True(t, row.PreparedSlot.Equal(slot))
	require.Nil(t, row.LastRunAt, "the slot has not come")

	b.ahead(t) // one run written ahead per sequence
	require.Len(t, b.runs(t, seq), 1)

	// Never early: the claim leases the hook only once the slot has come.
	require.False(t, b.claimedAt(t, root).Before(slot))
	b.deliver(t, root, true)
	require.Equal(t, map[string]string{"a": "completed", "b": "pending"}, b.steps(t, run.ID))
	b.deliver(t, b.hooks(t, run.ID)["b"], true)
	require.Equal(t, "completed", b.run(t, run.ID).Status)
}

// TestARunWrittenAheadFoldsIntoLastRunAt: once its slot has passed, the
// next scan that moves the sequence counts the run as its last.
func TestARunWrittenAheadFoldsIntoLastRunAt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: 2 * time.Second,
		steps: `[{"name": "a", "path": "/a", "data": {}}]`})
	b.ahead(t)
	require.Eventually(t, func() bool { return fixture.DBNow(t, b.tq).After(seq.StartAt.Add(6 * time.Second)) },
		20*time.Second, 100*time.Millisecond)

	b.ahead(t) // the slot after is within the lead now

	runs := b.runs(t, seq)
	require.Len(t, runs, 2)
	row := b.sequenceRow(t, seq)
	require.NotNil(t, row.LastRunAt)
	require.True(t, row.LastRunAt.Equal(seq.StartAt))
	require.True(t, row.PreparedSlot.Equal(seq.StartAt.Add(time.Minute)))
	require.True(t, row.NextRunAt.Equal(seq.StartAt.Add(2*time.Minute)))
}

// TestAReplacedSequenceHasItsRunWrittenAgain: a definition replaced before
// the slot withdraws the run written ahead (its hook deleted, its count
// given back) and writes the slot's run again by the new definition.
func TestAReplacedSequenceHasItsRunWrittenAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: 30 * time.Second, steps: twoSteps})
	b.ahead(t)
	old := b.runs(t, seq)[0]
	oldHook := b.hooks(t, old.ID)["a"]

	n, err := b.tq.ReviseSequenceForTest(context.Background(), storetest.ReviseSequenceForTestParams{
		ID: seq.ID, Steps: []byte(`[{"name": "c", "path": "/c", "data": {"new": true}}]`)})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	b.ahead(t)

	_, err = b.tq.GetRunForTest(context.Background(), old.ID)
	require.Error(t, err, "the old run is withdrawn")
	_, err = b.tq.GetHookForTest(context.Background(), oldHook.ID)
	require.Error(t, err, "its hook is deleted")
	runs := b.runs(t, seq)
	require.Len(t, runs, 1)
	require.True(t, runs[0].Slot.Equal(seq.StartAt))
	require.Equal(t, map[string]string{"c": "pending"}, b.steps(t, runs[0].ID))
	require.Equal(t, "/c", b.hooks(t, runs[0].ID)["c"].Path)
	require.EqualValues(t, 1, b.used(t), "the withdrawn hook is counted out")
	row := b.sequenceRow(t, seq)
	require.True(t, row.PreparedSlot.Equal(seq.StartAt))
	require.Equal(t, row.Revision, *row.PreparedRevision)
}

// TestAPausedSequenceHasItsRunWithdrawn: pausing before the slot leaves
// no run and no hook for it, and nothing counted.
func TestAPausedSequenceHasItsRunWithdrawn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: 30 * time.Second, steps: twoSteps})
	b.ahead(t)
	run := b.runs(t, seq)[0]
	hook := b.hooks(t, run.ID)["a"]
	n, err := b.tq.PauseSequenceForTest(context.Background(), seq.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	b.ahead(t)

	require.Empty(t, b.runs(t, seq))
	_, err = b.tq.GetHookForTest(context.Background(), hook.ID)
	require.Error(t, err)
	require.EqualValues(t, 0, b.used(t))
	row := b.sequenceRow(t, seq)
	require.Nil(t, row.PreparedSlot)
	require.Nil(t, row.LastRunAt)
}

// TestARunWhoseHookWasClaimedStays: a change that comes after the slot's
// hook was claimed is too late for that run: it stays, and counts as the
// sequence's last run.
func TestARunWhoseHookWasClaimedStays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: 2 * time.Second, steps: twoSteps})
	b.ahead(t)
	run := b.runs(t, seq)[0]
	b.claimedAt(t, b.hooks(t, run.ID)["a"])
	n, err := b.tq.PauseSequenceForTest(context.Background(), seq.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	b.ahead(t)

	require.Equal(t, []string{"running"}, statuses(b.runs(t, seq)))
	require.Len(t, b.hooks(t, run.ID), 1)
	require.EqualValues(t, 1, b.used(t))
	row := b.sequenceRow(t, seq)
	require.Nil(t, row.PreparedSlot)
	require.True(t, row.LastRunAt.Equal(seq.StartAt))
}

// TestOverlapSkipIsNotWrittenAhead: whether the previous run has finished
// is known only at the slot.
func TestOverlapSkipIsNotWrittenAhead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: 30 * time.Second, overlap: "skip", steps: twoSteps})

	b.ahead(t)

	require.Empty(t, b.runs(t, seq))
	require.Nil(t, b.sequenceRow(t, seq).PreparedSlot)
}

// TestTheLastSlotWrittenAheadEndsTheSequenceAtItsSlot: a sequence whose
// slot written ahead is its last stays active until the slot, then ends
// without a second run.
func TestTheLastSlotWrittenAheadEndsTheSequenceAtItsSlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	end := 30 * time.Second
	seq := b.sequence(t, def{schedule: `{"every": "1m"}`, startIn: 2 * time.Second, endIn: &end,
		steps: `[{"name": "a", "path": "/a", "data": {}}]`})
	b.ahead(t)
	row := b.sequenceRow(t, seq)
	require.Equal(t, "active", row.Status)
	require.True(t, row.NextRunAt.Equal(seq.StartAt))
	require.Eventually(t, func() bool { return fixture.DBNow(t, b.tq).After(seq.StartAt) },
		20*time.Second, 50*time.Millisecond)

	b.ahead(t)

	row = b.sequenceRow(t, seq)
	require.Equal(t, "ended", row.Status)
	require.Nil(t, row.NextRunAt)
	require.True(t, row.LastRunAt.Equal(seq.StartAt))
	require.Len(t, b.runs(t, seq), 1)
}

package crash

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	dispatcher "github.com/sundial-run/sundial/services/dispatcher/app"
)

// TestSchedulerKilledAfterClaiming kills the scheduler with SIGKILL at the
// worst moment for a claim: after its transaction committed (the hooks are
// leased to it in PostgreSQL) and before any of their DueHooks reached NATS.
// The scheduler talks to NATS through a proxy that the test freezes before
// the hooks come due; the frozen proxy forwards nothing more, and once it
// holds a DueHook publish for every hook (a scheduler publishes only after
// the claim commits), the scheduler is killed. A new scheduler must re-drive
// them all when their lease expires.
//
// Duplicates allowed: none. No DueHook of the killed scheduler ever reached
// NATS, so each hook is delivered once, by the re-drive; the warm-up hooks
// were completed before the freeze.
func TestSchedulerKilledAfterClaiming(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	const (
		warmup = 20
		hooks  = 200
	)
	b := setup(t, options{})
	proxy := newNATSProxy(t, b.natsServer().Addr().String())
	first := b.startScheduler(t, map[string]string{"SUNDIAL_NATS_URL": proxy.URL()})
	b.startDispatcher(t, 16)

	// The first scheduler works end to end through the proxy, and has
	// applied every result, before anything is held.
	for range warmup {
		b.schedule(t, map[string]any{"path": "/warmup", "postIn": "1s", "data": map[string]any{}})
	}
	require.Eventually(t, func() bool { return b.completed(t) == warmup }, 60*time.Second, 50*time.Millisecond,
		"the warm-up hooks were not completed through the proxied scheduler")

	proxy.freeze()
	// All due at the same instant, so that one claim takes them together.
	postAt := time.Now().Add(3 * time.Second).UTC().Truncate(time.Millisecond)
	for range hooks {
		b.schedule(t, map[string]any{"path": "/crash", "postAt": postAt.Format(time.RFC3339Nano), "data": map[string]any{}})
	}
	require.Eventually(t, func() bool { return proxy.heldDueHooks() >= hooks }, 60*time.Second, 10*time.Millisecond,
		"the frozen scheduler never tried to publish all %d DueHooks", hooks)
	held := proxy.heldDueHooks()
	first.Kill()
	require.Zero(t, b.receiver.Distinct()-warmup, "a held hook was delivered although its DueHook never reached NATS")

	b.startScheduler(t, nil)

	report := b.settle(t, 90*time.Second)
	b.requireClean(t, report, 0)
	t.Logf("%d hooks claimed and held unpublished at the kill, all re-driven; %d duplicates (bound 0)",
		held, report.TotalDuplicates())
}

// TestSchedulerKilledInSteadyStream kills the scheduler with SIGKILL while
// hooks keep coming due and being delivered, so that whatever it was doing
// is cut short: claims being made or published, results being applied.
// Another scheduler starts at once; every accepted hook must arrive.
//
// Duplicates allowed: the results the killed scheduler had taken from NATS
// and not yet acknowledged. A pull asks for no more messages than there are
// free handlers, so it holds at most its result concurrency of messages,
// and the bound allows twice that for a pull the server answered as the
// process died. A message is an AttemptResults of up to
// dispatcher.ResultBatch results, gathered for the dispatcher's linger, so
// the bound counts results: those of the largest messages published before
// the kill, as many as the messages the killed scheduler could hold (the
// test watches the results subject). NATS hands them out again after their
// ack wait (event.ResultsAckWait), and a hook whose lease expired meanwhile
// is re-driven. Claims it committed but did not publish are re-driven once,
// and results still in the stream are applied by the new scheduler within
// the lease.
func TestSchedulerKilledInSteadyStream(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	const (
		perPhase          = 60
		resultConcurrency = 4
	)
	b := setup(t, options{})
	results := b.watchResults(t)
	env := map[string]string{"SUNDIAL_SCHEDULER_RESULT_CONCURRENCY": fmt.Sprint(resultConcurrency)}
	first := b.startScheduler(t, env)
	b.startDispatcher(t, 16)

	l := b.startRetryingLoad(t, 1, 20*time.Millisecond)
	require.Eventually(t, func() bool { return b.receiver.Distinct() >= perPhase }, 60*time.Second, 10*time.Millisecond,
		"hooks were not delivered before the kill")
	first.Kill()
	// Read at once: a message published after the kill is none the killed
	// scheduler held, so reading a little late only loosens the bound.
	held, largest := results.largest(2 * resultConcurrency)
	killedAt := b.acceptedCount()
	b.startScheduler(t, env)
	require.Eventually(t, func() bool { return b.receiver.Distinct() >= killedAt+perPhase }, 60*time.Second, 10*time.Millisecond,
		"hooks were not delivered after the new scheduler started")
	s := l.stop(t)
	require.Empty(t, s.errs, "every create must be answered 201")
	require.Zero(t, s.refused, "the API refused hooks")

	report := b.settle(t, 120*time.Second)
	messages, unread := results.count()
	require.Zero(t, unread, "every result message is an AttemptResults")
	require.Positive(t, largest, "no result message seen before the kill")
	require.LessOrEqual(t, largest, dispatcher.ResultBatch, "a result message beyond the dispatcher's batch")
	bound := held
	b.requireClean(t, report, bound)
	t.Logf("%d hooks, %d accepted before the kill; %d duplicates (bound %d: the results of the %d largest of %d result messages, the largest %d)",
		report.Accepted, killedAt, report.TotalDuplicates(), bound, 2*resultConcurrency, messages, largest)
}

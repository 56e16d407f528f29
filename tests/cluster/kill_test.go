package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/internal/checker"
)

// kill is one SIGKILL of a NATS server during the burst.
type kill struct {
	node  string
	roles string
	at    time.Time
}

// TestNATSServersKilledMidBurst delivers 10,000 hooks, due evenly over
// 20 s, through two schedulers and three dispatchers on a three-server
// JetStream cluster with three replicas of everything. In the middle of
// the burst it kills (SIGKILL) the server that leads the JetStream meta
// group, having first made it the leader of every stream and consumer,
// restarts it once deliveries have resumed, waits until it has caught
// up, and kills another server, the due stream's leader by then, for
// good: the cluster ends on two servers, a majority.
//
// Every hook must arrive, none before its postAt. Duplicates are allowed
// only for deliveries in flight at a kill: a hook delivered before a kill
// whose acknowledgement or result the dead server took with it, delivered
// again after the kill; at most what the dispatchers hold at once
// (dispatchers x SUNDIAL_DISPATCHER_CONCURRENCY) per kill. The time from
// each kill to the first delivery after it, and the longest pause in
// deliveries after it, are logged.
func TestNATSServersKilledMidBurst(t *testing.T) {
	binaries.Use(t)
	t.Parallel()
	const (
		hooks       = 10000
		spread      = 20 * time.Second
		lead        = 15 * time.Second
		workers     = 32
		schedulers  = 2
		dispatchers = 3
		concurrency = 64
	)
	begin := time.Now()
	b := setup(t)
	for range schedulers {
		b.start(t, "scheduler", nil)
	}
	for range dispatchers {
		b.start(t, "dispatcher", map[string]string{"SUNDIAL_DISPATCHER_CONCURRENCY": fmt.Sprint(concurrency)})
	}
	ready := time.Since(begin)

	start := time.Now()
	window := start.Add(lead).UTC()
	b.createAll(t, hooks, workers, func(i int) map[string]any {
		at := window.Add(time.Duration(i) * spread / hooks)
		return map[string]any{"path": "/burst", "postAt": at.Format(time.RFC3339Nano), "data": map[string]any{"i": i}}
	})
	created := time.Since(start)
	t.Logf("suite ready in %s; created %d hooks in %s (%.0f/s), due from %s after the start for %s",
		ready.Round(time.Millisecond), hooks, created.Round(time.Millisecond), hooks/created.Seconds(), lead, spread)

	var kills []kill
	// The first kill: the meta leader, made the leader of everything.
	b.waitArrivals(t, hooks/5, lead+spread+30*time.Second)
	first, err := b.nats.metaLeader()
	require.NoError(t, err)
	b.nats.lead(t, first)
	kills = append(kills, b.kill(t, first))
	b.waitDeliveryAfter(t, kills[0].at)
	restarted := time.Now()
	b.nats.start(t, b.nats.index(t, first))
	require.Eventually(t, func() bool { return b.nats.healthy(b.nats.index(t, first)) }, 60*time.Second, 50*time.Millisecond,
		"%s never caught up after its restart", first)
	t.Logf("%s restarted and current (/healthz) in %s", first, time.Since(restarted).Round(time.Millisecond))

	// The second: another server, the due stream's leader unless that is
	// the first again.
	b.waitArrivals(t, hooks*3/5, spread+60*time.Second)
	second := b.dueLeaderOtherThan(t, first)
	kills = append(kills, b.kill(t, second))
	b.waitDeliveryAfter(t, kills[1].at)

	report := b.settle(t, hooks)
	arrivals := b.receiver.Arrivals()
	for _, k := range kills {
		after, pause := recovery(arrivals, k.at)
		t.Logf("kill -9 %s (%s): first delivery %s after the kill; longest pause in deliveries after it %s",
			k.node, k.roles, after.Round(time.Millisecond), pause.Round(time.Millisecond))
	}
	bound := len(kills) * dispatchers * concurrency
	requireDuplicatesFromKills(t, report, arrivals, kills, bound)
	t.Logf("%s; duplicates %d (bound %d: %d kills x %d dispatchers x %d in flight); whole test %s",
		report, report.TotalDuplicates(), bound, len(kills), dispatchers, concurrency, time.Since(begin).Round(time.Millisecond))
}

// kill makes a note of what node leads, then kills it.
func (b *bundle) kill(t *testing.T, node string) kill {
	t.Helper()
	roles := b.nats.leaders()
	at := time.Now()
	b.nats.kill(b.nats.index(t, node))
	t.Logf("killed %s at %d arrivals; leaders before: %s", node, b.receiver.Distinct(), roles)
	return kill{node: node, roles: roles, at: at}
}

// dueLeaderOtherThan is the due stream's leader, or another server than
// not when that leads it.
func (b *bundle) dueLeaderOtherThan(t *testing.T, not string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, err := b.nats.leader(ctx, groups[0])
	require.NoError(t, err)
	if leader != not {
		return leader
	}
	for _, n := range b.nats.nodes {
		if n.Name != not {
			return n.Name
		}
	}
	t.Fatal("no other server")
	return ""
}

// waitArrivals waits until n distinct hooks have arrived.
func (b *bundle) waitArrivals(t *testing.T, n int, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return b.receiver.Distinct() >= n }, within, 20*time.Millisecond,
		"fewer than %d hooks arrived within %s", n, within)
}

// waitDeliveryAfter waits until a delivery arrives after at.
func (b *bundle) waitDeliveryAfter(t *testing.T, at time.Time) {
	t.Helper()
	require.Eventually(t, func() bool {
		after, _ := recovery(b.receiver.Arrivals(), at)
		return after > 0
	}, 60*time.Second, 20*time.Millisecond, "no delivery within 60s of the kill")
}

// settle waits until every accepted hook has arrived and is completed and
// the due stream is empty (no delivery can come any more), and returns
// the checker's report, which must show nothing lost, unknown or early.
func (b *bundle) settle(t *testing.T, hooks int) checker.Report {
	t.Helper()
	accepted := b.acceptedHooks()
	require.Len(t, accepted, hooks)
	b.waitArrivals(t, hooks, 90*time.Second)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, hooks, b.completed(t), "hooks completed")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		left, err := b.nats.dueMessages(ctx)
		assert.NoError(c, err)
		assert.Zero(c, left, "due messages left in NATS")
	}, 60*time.Second, 100*time.Millisecond, "the suite never settled")
	r := checker.Check(accepted, b.receiver.Arrivals())
	require.Empty(t, r.Lost, "lost: %s", r)
	require.Empty(t, r.Unknown, "unknown: %s", r)
	require.Empty(t, r.Early, "early: %s", r)
	return r
}

// recovery is the time from at to the first arrival after it (0 when
// none), and the longest pause between arrivals from at on.
func recovery(arrivals []checker.Arrival, at time.Time) (first, pause time.Duration) {
	var times []time.Time
	for _, a := range arrivals {
		if a.At.After(at) {
			times = append(times, a.At)
		}
	}
	if len(times) == 0 {
		return 0, 0
	}
	slices.SortFunc(times, func(x, y time.Time) int { return x.Compare(y) })
	prev := at
	for _, ts := range times {
		pause = max(pause, ts.Sub(prev))
		prev = ts
	}
	return times[0].Sub(at), pause
}


// requireDuplicatesFromKills checks that every duplicate was delivered
// before a kill and again after it, and that there are at most bound.
func requireDuplicatesFromKills(t *testing.T, r checker.Report, arrivals []checker.Arrival, kills []kill, bound int) {
	t.Helper()
	times := map[string][]time.Time{}
	for _, a := range arrivals {
		if r.Duplicates[a.ID] > 0 {
			times[a.ID] = append(times[a.ID], a.At)
		}
	}
	for id, ts := range times {
		slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
		straddles := slices.ContainsFunc(kills, func(k kill) bool { return ts[0].Before(k.at) && !ts[len(ts)-1].Before(k.at) })
		require.True(t, straddles, "hook %s arrived %d times (%v) without a kill between its deliveries", id, len(ts), ts)
	}
	require.LessOrEqual(t, r.TotalDuplicates(), bound, "duplicates beyond what was in flight at the kills")
}

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
	// takenOver is when the survivors led everything again: until then
	// acknowledgements and results could not be stored, so a delivery
	// made before it may come again.
	takenOver time.Time
}

// TestNATSServersKilledMidBurst delivers 10,000 hooks, due evenly over
// 20 s, through two schedulers and three dispatchers on a three-server
// JetStream cluster with three replicas of everything. In the middle of
// the burst it kills (SIGKILL) the server that leads the JetStream meta
// group, having first made it the leader of every stream and consumer,
// restarts it once the survivors have elected new leaders, waits until
// it has caught up, and kills another server, the due stream's leader by
// then, for good: the cluster ends on two servers, a majority.
//
// Every hook must arrive, none before its postAt. Duplicates are allowed
// only for what the dispatchers held at a kill, delivered again after it,
// once per kill at most: the consumer's new leader hands out again at
// once every due message still unacknowledged (the election outlasted
// its AckWait), and the hooks whose results are not applied yet are
// delivered again, whether their first delivery came before the kill or,
// from a dispatcher still working through what it held, after it. And for
// hooks re-driven by their lease on a machine too loaded to apply their
// results within it (leaseRedrive). Logged: the time from each kill to
// new leaders, to the first delivery and to the first delivery of a hook
// due after it, the longest pause in deliveries, the duplicates of each
// kill, and the hooks a lease had to re-drive (delivered more than a
// lease late).
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
	// Restarted once the survivors have taken over, so that the kill is
	// felt: a server back within milliseconds would be re-elected.
	kills[0].takenOver = b.waitTakeover(t, first)
	restarted := time.Now()
	b.nats.start(t, b.nats.index(t, first))
	require.Eventually(t, func() bool { return b.nats.healthy(b.nats.index(t, first)) }, 60*time.Second, 50*time.Millisecond,
		"%s never caught up after its restart", first)
	t.Logf("%s restarted %s after the kill, current (/healthz) %s later", first,
		restarted.Sub(kills[0].at).Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))

	// The second: another server, the due stream's leader unless that is
	// the first again.
	b.waitArrivals(t, hooks*3/5, spread+60*time.Second)
	second := b.dueLeaderOtherThan(t, first)
	kills = append(kills, b.kill(t, second))
	kills[1].takenOver = b.waitTakeover(t, second)

	report := b.settle(t, hooks)
	arrivals := b.receiver.Arrivals()
	burstEnd := window.Add(spread)
	for i, k := range kills {
		until := burstEnd
		if i+1 < len(kills) && kills[i+1].at.Before(until) {
			until = kills[i+1].at
		}
		r := recovery(arrivals, k.at, until)
		t.Logf("kill -9 %s (%s): first delivery %s after the kill, first of a hook due after it %s; "+
			"longest pause in deliveries from it to the next kill or the end of the burst %s",
			k.node, k.roles, r.first.Round(time.Millisecond), r.firstDueAfter.Round(time.Millisecond), r.pause.Round(time.Millisecond))
	}
	// Over 15 s: held up by an election (up to 14 s seen) and its
	// backlog, or by a lease; over 25 s: re-driven by its lease (30 s,
	// counted from a claim up to the prefetch's lead before postAt).
	late, most := lateness(arrivals, 15*time.Second, 25*time.Second)
	t.Logf("first delivered more than 15 s after their postAt: %d hooks, more than 25 s: %d; the latest %s after",
		late[0], late[1], most.Round(time.Millisecond))
	requireDuplicatesFromKills(t, report, arrivals, kills)
	t.Logf("%s; whole test %s", report, time.Since(begin).Round(time.Millisecond))
}

// kill makes a note of what node leads, then kills it.
func (b *bundle) kill(t *testing.T, node string) kill {
	t.Helper()
	roles := b.nats.leaders()
	at := time.Now()
	b.nats.kill(b.nats.index(t, node))
	t.Logf("killed %s at %s, %d arrivals; leaders before: %s", node, at.UTC().Format("15:04:05.000"), b.receiver.Distinct(), roles)
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

// waitTakeover waits until the servers other than killed have elected a
// meta leader and a leader of every stream and consumer among themselves.
func (b *bundle) waitTakeover(t *testing.T, killed string) time.Time {
	t.Helper()
	start := time.Now()
	require.Eventually(t, func() bool {
		meta, err := b.nats.metaLeader()
		if err != nil || meta == killed {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, g := range groups {
			if leader, err := b.nats.leader(ctx, g); err != nil || leader == "" || leader == killed {
				return false
			}
		}
		return true
	}, 60*time.Second, 50*time.Millisecond, "the survivors of %s never took over", killed)
	done := time.Now()
	t.Logf("new leaders %s after killing %s: %s", done.Sub(start).Round(time.Millisecond), killed, b.nats.leaders())
	return done
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

// recovered is how deliveries went on after a kill.
type recovered struct {
	// first is the time to the first arrival after the kill (perhaps a
	// delivery in flight at the kill); firstDueAfter to the first arrival
	// of a hook due after the kill, so claimed and published after it.
	first, firstDueAfter time.Duration
	// pause is the longest time without an arrival from the kill until a
	// given time.
	pause time.Duration
}

func recovery(arrivals []checker.Arrival, at, until time.Time) recovered {
	var r recovered
	var times []time.Time
	for _, a := range arrivals {
		if !a.At.After(at) {
			continue
		}
		times = append(times, a.At)
		if a.PostAt.After(at) && (r.firstDueAfter == 0 || a.At.Sub(at) < r.firstDueAfter) {
			r.firstDueAfter = a.At.Sub(at)
		}
	}
	slices.SortFunc(times, func(x, y time.Time) int { return x.Compare(y) })
	prev := at
	for _, ts := range times {
		if ts.After(until) {
			ts = until
		}
		r.pause = max(r.pause, ts.Sub(prev))
		prev = ts
	}
	if len(times) > 0 {
		r.first = times[0].Sub(at)
	}
	return r
}

// lateness counts the hooks first delivered more than each of after
// their postAt, and returns the greatest lateness of a first delivery.
func lateness(arrivals []checker.Arrival, after ...time.Duration) ([]int, time.Duration) {
	first := map[string]checker.Arrival{}
	for _, a := range arrivals {
		if f, ok := first[a.ID]; !ok || a.At.Before(f.At) {
			first[a.ID] = a
		}
	}
	late, most := make([]int, len(after)), time.Duration(0)
	for _, a := range first {
		d := a.At.Sub(a.PostAt)
		most = max(most, d)
		for i, limit := range after {
			if d > limit {
				late[i]++
			}
		}
	}
	return late, most
}

// requireDuplicatesFromKills checks that every duplicate was in a
// dispatcher's hands at a kill (claimed before it, and first delivered
// no sooner than inHand before it: its acknowledgement or result may have
// died with the server, or not been applied when the consumer's new
// leader handed its message out again) and delivered again after the
// kill, at most once per kill; or was re-driven by its lease
// (leaseRedrive).
func requireDuplicatesFromKills(t *testing.T, r checker.Report, arrivals []checker.Arrival, kills []kill) {
	t.Helper()
	postAt := make(map[string]time.Time, len(arrivals))
	for _, a := range arrivals {
		postAt[a.ID] = a.PostAt
	}
	redriven := 0
	dups := r.DuplicateArrivals(arrivals)
	logDuplicates(t, dups, kills)
	for id, ts := range dups {
		held := slices.ContainsFunc(kills, func(k kill) bool {
			return postAt[id].Before(k.at.Add(claimedBefore)) && !ts[0].Before(k.at.Add(-inHand)) && ts[len(ts)-1].After(k.at)
		})
		if !held && len(ts) == 2 && ts[1].Sub(ts[0]) >= leaseRedrive {
			redriven++
			continue
		}
		require.True(t, held, "hook %s due at %s arrived %d times (%v): not claimed before a kill, first delivered at most %s before it and again after it, nor re-driven by its lease",
			id, postAt[id], len(ts), ts, inHand)
		require.LessOrEqual(t, len(ts), 1+len(kills), "hook %s delivered more than once per kill: %v", id, ts)
	}
	if redriven > 0 {
		t.Logf("%d hooks delivered twice, the second time at least %s after the first, with no kill between: their results were applied after their leases ended", redriven, leaseRedrive)
	}
}

const (
	// inHand is how long before a kill a hook may have been delivered while
	// its due message is still unacknowledged: a message is acknowledged
	// once each of its hooks is reported, and a hook waits for a delivery
	// slot at most the dispatcher's pool wait (2 s) before it is deferred,
	// then its result's batch is published.
	inHand = 5 * time.Second
	// claimedBefore: a hook due up to this after a kill may have been
	// claimed and published before it (the scheduler's claim ahead is at
	// most 2 s, claim.MaxClaimAhead).
	claimedBefore = 2 * time.Second
)

// logDuplicates logs, for the duplicates of each kill (the last kill
// from inHand before which the hook was first delivered), when their
// first deliveries came relative to the kill and how long after it the
// second came: what tells apart, when the test fails, deliveries in
// flight at the kill, the consumer's redeliveries at its new leader, and
// leases.
func logDuplicates(t *testing.T, dups map[string][]time.Time, kills []kill) {
	t.Helper()
	firsts, gaps := make([][]time.Duration, len(kills)), make([][]time.Duration, len(kills))
	for _, ts := range dups {
		i := len(kills) - 1
		for i >= 0 && ts[0].Before(kills[i].at.Add(-inHand)) {
			i--
		}
		if i >= 0 {
			firsts[i] = append(firsts[i], ts[0].Sub(kills[i].at))
			gaps[i] = append(gaps[i], ts[1].Sub(ts[0]))
		}
	}
	q := func(d []time.Duration, p int) time.Duration { return d[(len(d)-1)*p/100].Round(time.Millisecond) }
	for i, k := range kills {
		if len(firsts[i]) == 0 {
			continue
		}
		slices.Sort(firsts[i])
		slices.Sort(gaps[i])
		t.Logf("duplicates first delivered from %s before killing %s: %d; first delivery from the kill p0/p50/p100 %s/%s/%s; "+
			"second after the first p0/p50/p100 %s/%s/%s", inHand, k.node, len(firsts[i]),
			q(firsts[i], 0), q(firsts[i], 50), q(firsts[i], 100), q(gaps[i], 0), q(gaps[i], 50), q(gaps[i], 100))
	}
}

// leaseRedrive is the least time between a delivery and its hook's
// re-drive by the lease: a dispatcher starts a delivery only with the
// delivery timeout and 2 s left on the lease (12 s here), so a hook
// delivered again sooner, with no kill between, was not re-driven by its
// lease. Later, it was: its result was applied after its lease ended, on a
// machine too loaded to apply results within 12 s, and at-least-once
// delivers it again.
const leaseRedrive = 10 * time.Second

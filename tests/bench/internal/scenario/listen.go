package scenario

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/idlelisten"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// Goals of the listener (issue 15), checked and reported, never failing a
// run: the figures move with the machine.
const (
	goalListenPerSecond = 2000
	goalAddedP99Ms      = 20
	goalIdleGatewayMiB  = 100
)

// listenReady bounds the wait for `sundial listen` to be connected.
const listenReady = 60 * time.Second

// idleParallel is how many idle connections are being opened at once.
const idleParallel = 16

// idleHold is how long the idle connections stay open while the gateway's
// memory is read, and idleSample how often it is read meanwhile.
const (
	idleHold   = 2 * time.Second
	idleSample = 250 * time.Millisecond
)

// apiScheduler creates hooks through the API as one project.
type apiScheduler struct {
	client  *load.Client
	clients int
}

func (a apiScheduler) Schedule(ctx context.Context, postAts []time.Time, path string) ([]check.Hook, load.Created, error) {
	return a.client.CreateAll(ctx, postAts, a.clients, path)
}

// listenRun shapes one delivery run of the listen scenario.
type listenRun struct {
	name, via string
	hooks     int
	spread    time.Duration
	deadline  time.Duration
}

// listenBench is what the listen scenario's runs share.
type listenBench struct {
	e    *Env
	s    *suite.Suite
	rate float64
	// local is the plain-HTTP receiver `sundial listen` forwards to;
	// listener is that process once started.
	local    *receiver.Receiver
	listener *suite.Process
	// applied is how many results the scheduler applied in earlier runs.
	applied int
}

// listenerRoom is the listener sockets the listen scenario's gateway holds
// besides its idle ones: `sundial listen`'s, reconnecting.
const listenerRoom = 16

// listen measures the listener, all on one suite whose gateway stays up
// (it carries the listener's deliveries): first the gateway's memory with
// many idle listener connections, on a project of their own, while the
// gateway is fresh; then `sundial listen` for a second project; a short
// unmeasured warm-up of each path; then, back to back, a steady run
// delivered directly over HTTPS to the suite's project, which never
// listens (a project whose listener left has its hooks held for the resume
// window), and the same steady run through the listener; then a burst
// through the listener.
func (e *Env) listen(ctx context.Context) (res report.Result, err error) {
	c := e.Cfg
	dir := filepath.Join(c.Dir, "listen", "sundial")
	if err := os.RemoveAll(dir); err != nil {
		return res, err
	}
	steadyHooks := c.ListenSteadyRate * c.ListenSteadySeconds
	// The gateway's listener bounds, raised to hold the idle listeners,
	// all of one project, beside `sundial listen`: the scenario measures
	// what an open socket costs, not the bounds.
	le := *e
	le.Cfg.ServiceEnv = maps.Clone(c.ServiceEnv)
	if le.Cfg.ServiceEnv == nil {
		le.Cfg.ServiceEnv = map[string]string{}
	}
	le.Cfg.ServiceEnv["SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS"] = strconv.Itoa(c.ListenIdle + listenerRoom)
	le.Cfg.ServiceEnv["SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS_PER_PROJECT"] = strconv.Itoa(max(c.ListenIdle, listenerRoom))
	s, err := sundialSuite(ctx, &le, "listen", dir, arrivalRoom*(steadyHooks+c.ListenSteadyRate)+1000, 0, nil)
	if err != nil {
		return res, err
	}
	defer func() {
		if closeErr := s.Close(context.WithoutCancel(ctx)); closeErr != nil {
			res.Notes = append(res.Notes, "teardown: "+closeErr.Error())
		}
	}()
	e.Settings["sundial"] = s.Settings
	local, err := receiver.StartHTTP(arrivalRoom*(steadyHooks+c.ListenBurstSize+c.ListenSteadyRate) + 1000)
	if err != nil {
		return res, err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if closeErr := local.Close(closeCtx); closeErr != nil {
			res.Notes = append(res.Notes, "teardown: "+closeErr.Error())
		}
	}()
	l := &report.Listen{}
	res.Listen = l
	b := &listenBench{e: e, s: s, local: local}

	if l.Idle, err = b.idle(ctx, c.ListenIdle); err != nil {
		return res, fmt.Errorf("idle listeners: %w", err)
	}
	direct := apiScheduler{client: load.NewClient(s.APIBase, s.Project.APIKey, c.Clients), clients: c.Clients}
	if b.rate, err = calibrate(ctx, direct, max(steadyHooks, c.ListenBurstSize)); err != nil {
		return res, err
	}
	project, err := s.CreateProject(ctx, "bench-listen", s.Receiver.Domain())
	if err != nil {
		return res, err
	}
	if err := b.startListener(ctx, project, filepath.Join(dir, "listener.log")); err != nil {
		return res, err
	}
	defer func() {
		if stopErr := b.listener.Stop(listenerStopGrace); stopErr != nil {
			res.Notes = append(res.Notes, "sundial listen stop: "+stopErr.Error())
		}
	}()
	viaListener := apiScheduler{client: load.NewClient(s.APIBase, project.APIKey, c.Clients), clients: c.Clients}

	steady := func(name, via string, seconds int) listenRun {
		return listenRun{name: name, via: via, hooks: c.ListenSteadyRate * seconds,
			spread: time.Duration(seconds) * time.Second, deadline: time.Minute}
	}
	// The warm-ups open the paths' connections and fill the services'
	// caches, which the first measured run would otherwise pay alone.
	for _, w := range []struct {
		sched scheduler
		run   listenRun
	}{
		{direct, steady("https warm-up", "https", warmUpSeconds)},
		{viaListener, steady("listener warm-up", "listener", warmUpSeconds)},
	} {
		run, err := b.deliver(ctx, w.sched, w.run)
		l.WarmUps = append(l.WarmUps, run)
		if err != nil {
			return res, err
		}
	}
	for _, w := range []struct {
		sched scheduler
		run   listenRun
	}{
		{direct, steady("https steady", "https", c.ListenSteadySeconds)},
		{viaListener, steady("listener steady", "listener", c.ListenSteadySeconds)},
		{viaListener, listenRun{name: "listener burst", via: "listener", hooks: c.ListenBurstSize, deadline: scaleDeadline}},
	} {
		run, err := b.deliver(ctx, w.sched, w.run)
		l.Runs = append(l.Runs, run)
		if err != nil {
			return res, err
		}
	}
	b.finish(&res)
	return res, nil
}

// warmUpSeconds is the length of each path's warm-up, at the steady rate.
const warmUpSeconds = 1

// listenerStopGrace is how long `sundial listen` may take to stop after
// SIGTERM.
const listenerStopGrace = 15 * time.Second

// finish fills the scenario's summary figures, goals and verdict from its
// runs.
func (b *listenBench) finish(res *report.Result) {
	l := res.Listen
	directRun, steadyRun, burstRun := l.Runs[0], l.Runs[1], l.Runs[2]
	l.AddedP99Ms = round3(steadyRun.Check.Lateness.P99Ms - directRun.Check.Lateness.P99Ms)
	l.Goals = []report.Goal{
		{What: "deliveries/s through one listener (burst)", Target: fmt.Sprintf(">= %d", goalListenPerSecond),
			Value: burstRun.DeliveriesPerSecond, Unit: "/s", Met: burstRun.DeliveriesPerSecond >= goalListenPerSecond},
		{What: "lateness p99 added by the listener (steady)", Target: fmt.Sprintf("<= %d ms", goalAddedP99Ms),
			Value: l.AddedP99Ms, Unit: "ms", Met: l.AddedP99Ms <= goalAddedP99Ms},
		{What: fmt.Sprintf("gateway RSS with %d idle listeners", l.Idle.Connections), Target: fmt.Sprintf("< %d MiB", goalIdleGatewayMiB),
			Value: l.Idle.GatewayRSSMiB, Unit: "MiB", Met: l.Idle.GatewayRSSMiB < goalIdleGatewayMiB},
	}
	rss := b.s.PeakRSS()
	if peak, err := b.listener.PeakRSS(); err == nil {
		rss["listener"] = peak
	}
	res.PeakRSSMiB = mib(rss)
	res.OK = l.Idle.Opened.Connected == l.Idle.Connections && l.Idle.StillOpen == l.Idle.Connections
	if !res.OK {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of %d idle listeners connected (failures %v), %d still open when the memory was read",
			l.Idle.Opened.Connected, l.Idle.Connections, l.Idle.Opened.Errors, l.Idle.StillOpen))
	}
	for _, run := range l.Runs {
		res.Hooks += run.Hooks
		res.OK = res.OK && run.Check.Complete() && run.Check.Early == 0 && run.Misrouted == 0
		if run.Misrouted > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %d arrivals at the other receiver", run.Name, run.Misrouted))
		}
		for _, n := range run.Notes {
			res.Notes = append(res.Notes, run.Name+": "+n)
		}
	}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// idle opens n listener connections of a project of their own, reads the
// gateway's memory while they are all open, and closes them.
func (b *listenBench) idle(ctx context.Context, n int) (out report.Idle, err error) {
	out.Connections = n
	gw := b.s.Services["gateway"]
	before, err := gw.RSS()
	if err != nil {
		return out, err
	}
	out.GatewayRSSBeforeMiB = toMiB(before)
	project, err := b.s.CreateProject(ctx, "bench-idle", b.s.Receiver.Domain())
	if err != nil {
		return out, err
	}
	b.e.Log.Info("opening idle listener connections", "scenario", "listen", "connections", n)
	g, opened, err := idlelisten.Open(ctx, idlelisten.Options{APIBase: b.s.APIBase, APIKey: project.APIKey, Count: n, Parallel: idleParallel})
	out.Opened = opened
	if g != nil {
		defer func() {
			if closeErr := g.Close(); closeErr != nil {
				b.e.Log.Warn("closing idle listener connections", "err", closeErr)
			}
		}()
	}
	if err != nil {
		return out, err
	}
	// Read the memory a few times while they are open: the gateway may
	// still be settling each connection (presence, subscriptions) just
	// after its `connected`.
	var rss int64
	tick := time.NewTicker(idleSample)
	defer tick.Stop()
	for end := time.Now().Add(idleHold); ; {
		v, err := gw.RSS()
		if err != nil {
			return out, err
		}
		rss = max(rss, v)
		if time.Now().After(end) {
			break
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-tick.C:
		}
	}
	hwm, err := gw.PeakRSS()
	if err != nil {
		return out, err
	}
	out.GatewayRSSMiB, out.GatewayHWMMiB, out.StillOpen = toMiB(rss), toMiB(hwm), g.Open()
	if opened.Connected > 0 {
		out.PerConnectionKiB = math.Round(float64(rss-before)/1024/float64(opened.Connected)*10) / 10
	}
	b.e.Log.Info("idle listener connections open", "scenario", "listen", "connected", opened.Connected,
		"errors", opened.Errors, "gateway_rss_mib", out.GatewayRSSMiB, "gateway_rss_before_mib", out.GatewayRSSBeforeMiB)
	return out, nil
}

func toMiB(b int64) float64 { return math.Round(float64(b)/(1<<20)*10) / 10 }

// startListener runs `sundial listen` for project, forwarding to the local
// receiver, and waits until the project is listening: its presence is
// what the scheduler's claim reads to route the project's hooks.
func (b *listenBench) startListener(ctx context.Context, project suite.Credentials, logPath string) error {
	p, err := b.s.StartListener(b.e.Bin.Sundial, project, b.local.URL(), logPath)
	if err != nil {
		return err
	}
	b.listener = p
	deadline := time.Now().Add(listenReady)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("sundial listen exited before it connected: %v (see %s)", err, logPath)
		}
		presence, err := b.s.ListenerPresence(ctx, project.ProjectID)
		if err == nil && presence.Listening {
			b.e.Log.Info("sundial listen connected", "scenario", "listen", "sockets", presence.Sockets)
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("sundial listen not connected within %s (see %s)", listenReady, logPath), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// deliver runs one delivery run: hooks created through sched, due from a
// first postAt chosen from the calibrated create rate, expected at the
// local receiver when via is the listener and at the HTTPS receiver
// otherwise. It returns once every hook arrived and its result was
// applied, or the deadline passed.
func (b *listenBench) deliver(ctx context.Context, sched scheduler, p listenRun) (run report.ListenRun, err error) {
	run = report.ListenRun{Name: p.name, Via: p.via, Hooks: p.hooks}
	recv, other := b.s.Receiver, b.local
	if p.via == "listener" {
		recv, other = b.local, b.s.Receiver
	}
	lead := time.Duration(float64(p.hooks)/(createMargin*b.rate)*float64(time.Second)) + 3*time.Second
	t0 := time.Now().Add(lead).Truncate(time.Millisecond)
	postAts := make([]time.Time, p.hooks)
	for i := range postAts {
		postAts[i] = t0.Add(time.Duration(int64(p.spread) / int64(p.hooks) * int64(i)))
	}
	b.e.Log.Info("creating hooks", "scenario", "listen", "run", p.name, "hooks", p.hooks, "first_post_at_in", lead.Round(time.Millisecond))
	began, from, otherFrom, conns := time.Now(), recv.Count(), other.Count(), b.local.Connections()
	hooks, created, err := sched.Schedule(ctx, postAts, "/bench/listen")
	run.Create = created
	if err != nil {
		return run, err
	}
	if created.Finished.After(t0) {
		run.Notes = append(run.Notes, fmt.Sprintf("creation ended %.1f s after the first postAt: lateness includes creation", created.Finished.Sub(t0).Seconds()))
	}
	if err := waitUntil(ctx, t0); err != nil {
		return run, err
	}
	cpu0 := b.cpu()
	if !waitDelivered(ctx, recv, hooks, postAts[len(postAts)-1].Add(p.deadline)) {
		run.Notes = append(run.Notes, fmt.Sprintf("not every hook arrived within %s of the last postAt", p.deadline))
	}
	raw, _ := recv.ArrivalsFrom(from)
	arrivals := make([]check.Arrival, len(raw))
	for i, a := range raw {
		arrivals[i] = check.Arrival{ID: a.ID, At: recv.At(a)}
	}
	run.Check = check.Compare(hooks, arrivals)
	b.applied += len(hooks)
	if n := waitApplied(ctx, b.s.Services["scheduler"].LogPath, b.applied, time.Now().Add(appliedWait)); n < b.applied {
		run.Notes = append(run.Notes, fmt.Sprintf("only %d of %d results (of every run so far) applied within %s of the last arrival", n, b.applied, appliedWait))
	}
	run.CPUSeconds = cpuDelta(cpu0, b.cpu())
	run.Misrouted = other.Count() - otherFrom
	if p.via == "listener" {
		run.LocalConnections = b.local.Connections() - conns
	}
	run.AllDeliveredSeconds, run.DeliveriesPerSecond, run.SustainedPerSecond = throughput(run.Check)
	run.Stages = stages(b.s, run.Check.FirstPostAt, began, run.Check)
	b.e.Log.Info("run done", "scenario", "listen", "run", p.name, "delivered", run.Check.Delivered,
		"late_p99_ms", run.Check.Lateness.P99Ms, "deliveries_per_s", run.DeliveriesPerSecond)
	return run, nil
}

// cpu reads the suite's processor times and the listener's, once started.
func (b *listenBench) cpu() map[string]time.Duration {
	out := b.s.CPU()
	if b.listener != nil {
		if d, err := b.listener.CPU(); err == nil {
			out["listener"] = d
		}
	}
	return out
}

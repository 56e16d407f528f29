package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/logscan"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// sequenceZone is the time zone of the sequences' calendar schedules: one
// with DST, as most users' are.
const sequenceZone = "Europe/Paris"

// sequenceAPIBudget is how long creating the sequences through the API may
// take, at the rate measured first: beyond it, one is created through the
// API and the others copied from its row (suite.CloneSequences).
const sequenceAPIBudget = 90 * time.Second

// writeAhead is how long before its slot the scheduler writes a run
// (docs/sequences.md, "Runs written ahead of their slot").
const writeAhead = 55 * time.Second

// sequenceRunDeadline bounds the wait for every run after the slot, and
// for every root hook after the last run: at the 180 runs/s measured on a
// busy 2-vCPU machine, 100,000 runs take 9 minutes.
const sequenceRunDeadline = 20 * time.Minute

// runPoll is how often the runs of the slot are counted: the count reads
// the runs table (the run start times come from the rows, not from the
// poll), so it is kept rare not to load the machine measured.
const runPoll = time.Second

// sequenceRequest is the body of POST /v1/sequences.
type sequenceRequest struct {
	Name     string         `json:"name"`
	Schedule map[string]any `json:"schedule"`
	StartAt  string         `json:"startAt,omitempty"`
	Steps    []sequenceStep `json:"steps"`
}

type sequenceStep struct {
	Name string         `json:"name"`
	Path string         `json:"path"`
	Data map[string]int `json:"data"`
}

// dailyAt is a daily calendar schedule at t's wall time in loc.
func dailyAt(t time.Time, loc *time.Location) map[string]any {
	l := t.In(loc)
	return map[string]any{"frequency": "daily", "timezone": loc.String(),
		"time": map[string]int{"hour": l.Hour(), "minute": l.Minute()}}
}

// sequenceBody is a sequence of one root step delivering to path.
func sequenceBody(name string, schedule map[string]any, startAt time.Time, path string, n int) []byte {
	req := sequenceRequest{Name: name, Schedule: schedule,
		Steps: []sequenceStep{{Name: "root", Path: path, Data: map[string]int{"n": n}}}}
	if !startAt.IsZero() {
		req.StartAt = startAt.UTC().Format(time.RFC3339Nano)
	}
	raw, err := json.Marshal(req)
	if err != nil {
		panic(err) // a struct of strings and ints always encodes
	}
	return raw
}

// sequenceSuite starts Sundial for a sequence scenario in a fresh folder.
func (e *Env) sequenceSuite(ctx context.Context, name string, arrivals int) (*suite.Suite, *load.Client, error) {
	dir := filepath.Join(e.Cfg.Dir, name, "sundial")
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, err
	}
	s, err := sundialSuite(ctx, e, name, dir, arrivals, 0, nil)
	if err != nil {
		return nil, nil, err
	}
	e.Settings["sundial"] = s.Settings
	return s, load.NewClient(s.APIBase, s.Project.APIKey, e.Cfg.Clients), nil
}

// closeSuite stops s, noting a failure in res.
func closeSuite(ctx context.Context, s *suite.Suite, res *report.Result) {
	if err := s.Close(context.WithoutCancel(ctx)); err != nil {
		res.Notes = append(res.Notes, "teardown: "+err.Error())
	}
}

// sequences is the sequences scenario: Cfg.Sequences sequences whose next
// slot is one instant (a daily calendar schedule at that wall time), each
// with one root step delivered to the receiver. It times, from the slot,
// the runs' start by the database clock and the root hooks' arrivals.
func (e *Env) sequences(ctx context.Context) (res report.Result, err error) {
	n := e.Cfg.Sequences
	res.Hooks = n
	s, client, err := e.sequenceSuite(ctx, "sequences", arrivalRoom*n+1000)
	if err != nil {
		return res, err
	}
	defer closeSuite(ctx, s, &res)
	loc, err := time.LoadLocation(sequenceZone)
	if err != nil {
		return res, err
	}
	due := &report.SequenceDue{Sequences: n}
	res.Sequence = &report.Sequence{Due: due}
	res.Notes = append(res.Notes, loadNote())

	// The API's rate, with sequences whose first slot is next year (they
	// stay, never due during the run).
	far := time.Now().AddDate(1, 0, 0)
	calib := min(max(n/50, 100), 2000)
	_, due.APICreate, err = client.CreateSequences(ctx, calib, e.Cfg.Clients, func(i int) []byte {
		return sequenceBody(fmt.Sprintf("calibrate-%d", i), dailyAt(far, loc), far, "/calibrate", i)
	})
	if err != nil {
		return res, fmt.Errorf("calibrate: %w", err)
	}
	rate := due.APICreate.PerSecond
	viaAPI := time.Duration(float64(n)/rate*float64(time.Second)) <= sequenceAPIBudget
	lead := 10*time.Second + time.Duration(n)*100*time.Microsecond // one create, then the copy
	due.Created = "direct"
	if viaAPI {
		lead = time.Duration(float64(n)/(createMargin*rate)*float64(time.Second)) + 5*time.Second
		due.Created = "api"
	}
	// A calendar slot is a whole minute, at least the scheduler's lead
	// (writeAhead) after the sequences exist, as a daily schedule's slot
	// nearly always is.
	slot := time.Now().Add(lead + writeAhead).Truncate(time.Minute).Add(time.Minute).UTC()
	due.Slot, due.Schedule = slot, fmt.Sprintf("daily at %s %s, one root step", slot.In(loc).Format("15:04"), sequenceZone)
	e.Log.Info("creating sequences", "sequences", n, "how", due.Created, "api_rate", math.Round(rate), "slot_in", time.Until(slot).Round(time.Second))
	path := "/bench/sequences"
	body := func(i int) []byte {
		return sequenceBody(fmt.Sprintf("s-%d", i), dailyAt(slot, loc), time.Time{}, path, i)
	}
	created := time.Now()
	if viaAPI {
		seqs, c, err := client.CreateSequences(ctx, n, e.Cfg.Clients, body)
		if err != nil {
			return res, err
		}
		res.Create = c
		if err := plannedAt(seqs, slot); err != nil {
			return res, err
		}
	} else {
		seqs, _, err := client.CreateSequences(ctx, 1, 1, body)
		if err != nil {
			return res, err
		}
		if err := plannedAt(seqs, slot); err != nil {
			return res, err
		}
		took, err := suite.CloneSequences(ctx, s.DBURL, seqs[0].ID, n-1)
		if err != nil {
			return res, err
		}
		due.DirectSeconds = math.Round(took.Seconds()*100) / 100
		res.Create = load.Created{Count: n, Seconds: time.Since(created).Seconds(), PerSecond: stats.PerSecond(n, time.Since(created)), Finished: time.Now()}
		res.Notes = append(res.Notes, fmt.Sprintf("1 sequence created through the API and %d copied from its row by SQL in %.2f s: the API's %.0f sequences/s would have taken %.1f s",
			n-1, took.Seconds(), rate, float64(n)/rate))
	}
	if time.Now().After(slot) {
		res.Notes = append(res.Notes, fmt.Sprintf("creation ended %.1f s after the slot: the figures include creation", time.Since(slot).Seconds()))
	}
	// The gateway has no part in running sequences or delivering.
	if err := s.StopService("gateway"); err != nil {
		res.Notes = append(res.Notes, "gateway stop: "+err.Error())
	}
	if err := waitUntil(ctx, slot); err != nil {
		return res, err
	}
	cpu0 := s.CPU()
	// The scheduler's and dispatcher's profiles from the slot on, as the
	// burst's are from its instant.
	profiled := e.profile(ctx, s, "sequences", e.Cfg.PprofSeconds, "scheduler", "dispatcher")
	defer func() { res.Profiles = <-profiled }()
	runHooks, err := waitRuns(ctx, s.DBURL, slot, n, slot.Add(sequenceRunDeadline))
	if err != nil {
		return res, err
	}
	due.RunsStarted = len(runHooks)
	hooks := make([]check.Hook, len(runHooks))
	starts := make([]time.Duration, len(runHooks))
	startEvents := make([]logscan.Event, len(runHooks))
	for i, h := range runHooks {
		hooks[i] = check.Hook{ID: h.HookID, PostAt: slot}
		starts[i] = h.StartedAt.Sub(slot)
		startEvents[i] = logscan.Event{At: h.StartedAt, Count: 1}
	}
	due.RunStart = stats.Summarize(starts)
	ahead := 0
	for _, h := range runHooks {
		if h.StartedAt.Equal(slot) {
			ahead++
		}
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d of %d runs were written ahead of the slot (started at it); the others when written, after it", ahead, len(runHooks)))
	if len(runHooks) < n {
		res.Notes = append(res.Notes, fmt.Sprintf("only %d of %d runs started within %s of the slot", len(runHooks), n, sequenceRunDeadline))
	}
	if !waitDelivered(ctx, s.Receiver, hooks, time.Now().Add(sequenceRunDeadline)) {
		res.Notes = append(res.Notes, fmt.Sprintf("not every root hook arrived within %s of the last run", sequenceRunDeadline))
	}
	res.Check = check.Compare(hooks, arrivalsOf(s.Receiver))
	res.Check.Scheduled = n
	res.Check.Missing = n - res.Check.Delivered
	fillTimes(&res)
	if applied := waitApplied(ctx, s.Services["scheduler"].LogPath, len(hooks), time.Now().Add(appliedWait)); applied < len(hooks) {
		res.Notes = append(res.Notes, fmt.Sprintf("only %d of %d results applied within %s of the last arrival", applied, len(hooks), appliedWait))
	}
	res.CPUSeconds = cpuDelta(cpu0, s.CPU())
	res.PeakRSSMiB = mib(s.PeakRSS())
	slices.SortFunc(startEvents, func(a, b logscan.Event) int { return a.At.Compare(b.At) })
	res.Stages = append([]logscan.Stage{logscan.Summarize("run started", startEvents, slot, time.Time{})}, stages(s, slot, time.Time{}, res.Check)...)
	allStarted := due.RunStart.MaxMs / 1000
	res.Sequence.Goals = append(res.Sequence.Goals, report.Goal{What: "every run started after the slot", Target: "within 5 s",
		Value: allStarted, Unit: "s", Met: due.RunsStarted == n && allStarted <= 5})
	res.OK = due.RunsStarted == n && res.Check.Complete() && res.Check.Early == 0
	return res, nil
}

// plannedAt checks that the API planned every sequence's next run at slot.
func plannedAt(seqs []load.Sequence, slot time.Time) error {
	for _, q := range seqs {
		if q.NextRunAt == nil || !q.NextRunAt.Equal(slot) {
			return fmt.Errorf("sequence %s: nextRunAt %v, want the slot %s", q.ID, q.NextRunAt, slot.Format(time.RFC3339))
		}
	}
	return nil
}

// waitRuns polls the slot's runs (by the database clock) until want have
// started or the deadline, then returns their root hooks.
func waitRuns(ctx context.Context, dbURL string, slot time.Time, want int, deadline time.Time) ([]suite.RunHook, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tick := time.NewTicker(runPoll)
	defer tick.Stop()
	for {
		got, err := suite.SlotRuns(ctx, conn, slot)
		if err != nil {
			return nil, err
		}
		if got >= want || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	return suite.SlotRunHooks(ctx, conn, slot)
}

// loadNote is the machine's load average, for the report: the figures
// mean little when other work shares the machine.
func loadNote() string {
	return "load average (1, 5, 15 min) at the start: " + loadAverage()
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return err.Error()
	}
	return strings.Join(strings.Fields(string(raw))[:3], ", ")
}

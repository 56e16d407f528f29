package scenario

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// memoryGoal is the bound on the scheduler's peak RSS with the
// sequences loaded, over its peak with none.
const memoryGoal = 1.10

// sequenceMemory is the sequence-memory scenario: the peak RSS (VmHWM) of
// a freshly started scheduler over a window of plain hooks at SteadyRate,
// first with no sequence, then with SequenceMemoryRows sequences whose
// next slot is next year (none due), copied from one the API created.
func (e *Env) sequenceMemory(ctx context.Context) (res report.Result, err error) {
	c := e.Cfg
	perWindow := c.SteadyRate * c.SequenceMemorySeconds
	s, client, err := e.sequenceSuite(ctx, "sequence-memory", arrivalRoom*2*perWindow+1000)
	if err != nil {
		return res, err
	}
	defer closeSuite(ctx, s, &res)
	m := &report.SequenceMemory{Rows: c.SequenceMemoryRows, WindowSeconds: c.SequenceMemorySeconds, HooksPerSec: c.SteadyRate}
	res.Sequence = &report.Sequence{Memory: m}
	res.Notes = append(res.Notes, loadNote())
	res.Hooks = 2 * perWindow

	empty, emptyCheck, err := e.memoryWindow(ctx, s, client, "empty")
	if err != nil {
		return res, err
	}
	t := time.Now()
	if err := e.loadFarSequences(ctx, s, client, c.SequenceMemoryRows); err != nil {
		return res, err
	}
	m.LoadSeconds = since(t)
	e.checkpoint(ctx, "sequence-memory", "sundial")
	loaded, loadedCheck, err := e.memoryWindow(ctx, s, client, "loaded")
	if err != nil {
		return res, err
	}
	m.EmptyMiB, m.LoadedMiB = mib(map[string]int64{"x": empty})["x"], mib(map[string]int64{"x": loaded})["x"]
	m.Ratio = math.Round(float64(loaded)/float64(empty)*1000) / 1000
	m.EmptyLateP99Ms, m.LoadedLateP99Ms = emptyCheck.Lateness.P99Ms, loadedCheck.Lateness.P99Ms
	res.Check = loadedCheck
	res.PeakRSSMiB = mib(s.PeakRSS())
	res.Sequence.Goals = append(res.Sequence.Goals, report.Goal{What: fmt.Sprintf("scheduler peak RSS with %d sequences over none", m.Rows),
		Target: fmt.Sprintf("at most %.2f", memoryGoal), Value: m.Ratio, Unit: "x", Met: m.Ratio <= memoryGoal})
	for name, o := range map[string]check.Outcome{"empty": emptyCheck, "loaded": loadedCheck} {
		if !o.Complete() || o.Early > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s window: %d of %d hooks delivered, %d early", name, o.Delivered, o.Scheduled, o.Early))
		}
	}
	res.OK = emptyCheck.Complete() && loadedCheck.Complete() && emptyCheck.Early == 0 && loadedCheck.Early == 0
	return res, nil
}

// memoryWindow restarts the scheduler, runs a window of plain hooks at
// SteadyRate through it (created through the API ahead of time) and
// returns its VmHWM once every hook arrived, with the hooks' outcome.
func (e *Env) memoryWindow(ctx context.Context, s *suite.Suite, client *load.Client, name string) (int64, check.Outcome, error) {
	c := e.Cfg
	if err := s.RestartService(ctx, "scheduler"); err != nil {
		return 0, check.Outcome{}, err
	}
	n := c.SteadyRate * c.SequenceMemorySeconds
	window := time.Duration(c.SequenceMemorySeconds) * time.Second
	// The API takes 5,000 hooks/s or more (the schedule scenario).
	t0 := time.Now().Add(3*time.Second + time.Duration(n)*200*time.Microsecond).Truncate(time.Millisecond)
	postAts := make([]time.Time, n)
	for i := range postAts {
		postAts[i] = t0.Add(window / time.Duration(n) * time.Duration(i))
	}
	start := s.Receiver.Count()
	hooks, _, err := client.CreateAll(ctx, postAts, c.Clients, "/bench/sequence-memory/"+name)
	if err != nil {
		return 0, check.Outcome{}, err
	}
	waitDelivered(ctx, s.Receiver, hooks, postAts[n-1].Add(time.Minute))
	rss, err := s.Services["scheduler"].PeakRSS()
	if err != nil {
		return 0, check.Outcome{}, err
	}
	arrivals := arrivalsOf(s.Receiver)
	e.Log.Info("memory window", "scenario", "sequence-memory", "window", name, "scheduler_hwm_mib", rss>>20)
	return rss, check.Compare(hooks, arrivals[min(start, len(arrivals)):]), nil
}

// loadFarSequences stores rows sequences whose first slot is next year:
// one through the API, the others copied from its row.
func (e *Env) loadFarSequences(ctx context.Context, s *suite.Suite, client *load.Client, rows int) error {
	loc, err := time.LoadLocation(sequenceZone)
	if err != nil {
		return err
	}
	far := time.Now().AddDate(1, 0, 0)
	seqs, _, err := client.CreateSequences(ctx, 1, 1, func(i int) []byte {
		return sequenceBody("far", dailyAt(far, loc), far, "/bench/sequence-memory/far", i)
	})
	if err != nil {
		return err
	}
	took, err := suite.CloneSequences(ctx, s.DBURL, seqs[0].ID, rows-1)
	e.Log.Info("sequences loaded", "scenario", "sequence-memory", "rows", rows, "seconds", took.Seconds())
	return err
}

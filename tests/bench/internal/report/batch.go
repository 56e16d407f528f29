package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// Goals of the batch intake (issue 19), checked and reported, never
// failing a run: the figures move with the machine.
const (
	// BatchGoalPerSecond is the hooks/s POST /v1/hooks/batch must reach.
	BatchGoalPerSecond = 50_000
	// BatchGoalVsCopy is the share of PostgreSQL's own COPY rate that
	// figure stands for on the 2-vCPU machine.
	BatchGoalVsCopy = 0.5
	// SingleGoalPerSecond is what POST /v1/hooks (the schedule scenario)
	// must keep.
	SingleGoalPerSecond = 8_000
)

// Batch is the batch-intake scenario's figures beyond its Result's Create
// (hooks created, hooks/s, latency per request, errors by status).
type Batch struct {
	// Size is the hooks of each request, Clients the requests at once.
	Size    int `json:"size"`
	Clients int `json:"clients"`
	// Requests answered 201, and their rate.
	Requests          int     `json:"requests"`
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	// Copy is PostgreSQL's own rate for rows like the batch's, in the same
	// database after the loop, and VsCopy the batch's hooks/s over it.
	Copy   suite.CopyRate `json:"copy"`
	VsCopy float64        `json:"vsCopy"`
	// CPUSeconds is each process's processor time during the loop, and
	// CPUMicrosPerHook the gateway's and PostgreSQL's per hook created.
	CPUMicrosPerHook map[string]float64 `json:"cpuMicrosPerHook"`
	// Load is the machine's load average before and after the loop.
	Load []string `json:"load"`
	// Goals are the issue's, against this run's figures (the single
	// create's when schedule ran too).
	Goals []Goal `json:"goals"`
}

// BatchGoals sets the goals of each batch-intake result, with the
// schedule row's hooks/s when it ran in the same run.
func BatchGoals(results []Result) {
	single := -1.0
	for _, r := range results {
		if r.Scenario == "schedule" && r.OK {
			single = r.Create.PerSecond
		}
	}
	for i := range results {
		b := results[i].Batch
		if b == nil {
			continue
		}
		perSecond := results[i].Create.PerSecond
		b.Goals = []Goal{
			{What: "batch intake", Target: fmt.Sprintf("at least %d", BatchGoalPerSecond), Value: perSecond, Unit: "hooks/s", Met: perSecond >= BatchGoalPerSecond},
			{What: "batch intake over COPY", Target: fmt.Sprintf("at least %.2f", BatchGoalVsCopy), Value: b.VsCopy, Unit: "x", Met: b.VsCopy >= BatchGoalVsCopy},
		}
		if single >= 0 {
			b.Goals = append(b.Goals, Goal{What: "single POST /v1/hooks (schedule, same run)", Target: fmt.Sprintf("at least %d", SingleGoalPerSecond),
				Value: single, Unit: "hooks/s", Met: single >= SingleGoalPerSecond})
		}
	}
}

func (r Report) printBatch(w io.Writer) {
	for _, res := range r.Results {
		b := res.Batch
		if b == nil {
			continue
		}
		c := res.Create
		fmt.Fprintf(w, "\nBatch intake (POST /v1/hooks/batch of %d hooks, closed loop, %d clients; latency per request):\n", b.Size, b.Clients)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "hooks\trequests\ts\thooks/s\trequests/s\tp50 ms\tp99 ms\tmax ms\terrors\tCOPY hooks/s\tx COPY\tgateway RSS MiB\tok\t")
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%.0f\t%.2f\t%.1f\t%v\t\n", c.Count, b.Requests, c.Seconds, c.PerSecond,
			b.RequestsPerSecond, c.Latency.P50Ms, c.Latency.P99Ms, c.Latency.MaxMs, formatErrors(c.Errors), b.Copy.PerSecond, b.VsCopy,
			res.PeakRSSMiB["gateway"], res.OK)
		_ = tw.Flush()
		fmt.Fprintf(w, "COPY: %d rows in %.2f s, %d connections at once; CPU us per hook in the loop: %s\n", b.Copy.Rows, b.Copy.Seconds, b.Copy.Connections, formatMap(b.CPUMicrosPerHook, "%.1f"))
		for _, l := range b.Load {
			fmt.Fprintln(w, l)
		}
		printGoals(w, b.Goals)
	}
}

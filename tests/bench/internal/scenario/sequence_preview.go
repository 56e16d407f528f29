package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
)

// previewCount is the slots each preview asks for: the API's maximum.
const previewCount = 100

// previewGoalMs is the bound on either preview's p99.
const previewGoalMs = 5.0

// previewWarmUp requests of each kind go first, unmeasured: they open the
// connection and fill the gateway's API key cache.
const previewWarmUp = 20

// previewSchedule is the worst case of the calendar engine: hourly (the
// most slots per day) in a DST zone, from a date whose 100 slots cross a
// transition (America/New_York springs forward on 14 March 2027).
var previewSchedule = map[string]any{"frequency": "hourly", "timezone": "America/New_York", "time": map[string]int{"minute": 30}}

const previewStartAt = "2027-03-12T00:00:00Z"

// sequencePreview is the sequence-preview scenario: POST
// /v1/sequences/preview (a schedule in the body, nothing stored) and GET
// /v1/sequences/{id}/preview (a stored sequence), count=100, each
// SequencePreviewRequests times one after another against the gateway.
func (e *Env) sequencePreview(ctx context.Context) (res report.Result, err error) {
	s, client, err := e.sequenceSuite(ctx, "sequence-preview", 1000)
	if err != nil {
		return res, err
	}
	defer closeSuite(ctx, s, &res)
	p := &report.SequencePreview{Count: previewCount,
		Schedule: fmt.Sprintf("hourly at :30 in America/New_York from %s (crosses the spring-forward gap)", previewStartAt)}
	res.Sequence = &report.Sequence{Preview: p}
	res.Notes = append(res.Notes, loadNote())
	start, err := time.Parse(time.RFC3339, previewStartAt)
	if err != nil {
		return res, err
	}
	seqs, _, err := client.CreateSequences(ctx, 1, 1, func(i int) []byte {
		return sequenceBody("preview", previewSchedule, start, "/bench/sequence-preview", i)
	})
	if err != nil {
		return res, err
	}
	stateless, err := json.Marshal(map[string]any{"schedule": previewSchedule, "startAt": previewStartAt, "count": previewCount})
	if err != nil {
		return res, err
	}
	n := e.Cfg.SequencePreviewRequests
	stored := fmt.Sprintf("/v1/sequences/%s/preview?count=%d", seqs[0].ID, previewCount)
	for _, r := range []struct {
		method, path string
		body         []byte
		out          *load.Timed
	}{
		{http.MethodPost, "/v1/sequences/preview", stateless, &p.Stateless},
		{http.MethodGet, stored, nil, &p.Stored},
	} {
		if _, err := client.Sequential(ctx, previewWarmUp, r.method, r.path, r.body, hundredSlots); err != nil {
			return res, err
		}
		if *r.out, err = client.Sequential(ctx, n, r.method, r.path, r.body, hundredSlots); err != nil {
			return res, err
		}
		res.Sequence.Goals = append(res.Sequence.Goals, report.Goal{What: r.method + " preview p99", Target: fmt.Sprintf("under %.0f ms", previewGoalMs),
			Value: r.out.Latency.P99Ms, Unit: "ms", Met: r.out.Latency.P99Ms < previewGoalMs})
	}
	res.PeakRSSMiB = mib(s.PeakRSS())
	res.OK = len(p.Stateless.Errors) == 0 && len(p.Stored.Errors) == 0 &&
		p.Stateless.Latency.Count == n && p.Stored.Latency.Count == n
	return res, nil
}

// hundredSlots checks a preview's answer: previewCount run times, in
// increasing order.
func hundredSlots(raw []byte) error {
	var out struct {
		Data struct {
			RunTimes []time.Time `json:"runTimes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("preview answer: %w", err)
	}
	times := out.Data.RunTimes
	if len(times) != previewCount {
		return fmt.Errorf("preview answer: %d run times, want %d", len(times), previewCount)
	}
	for i := 1; i < len(times); i++ {
		if !times[i].After(times[i-1]) {
			return fmt.Errorf("preview answer: run time %d (%s) is not after the one before", i, times[i])
		}
	}
	return nil
}

package dashboard

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-run/sundial/pkg/deliverystats"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// figureRange is a choice of the overview's ?range: how far back, and the
// step the deliveries are summed per.
type figureRange struct {
	Name  string
	Span  time.Duration
	Step  time.Duration
	Label string
}

// figureRanges are the overview's ranges (docs/dashboard.md, "Routes").
var figureRanges = []figureRange{
	{"1h", time.Hour, time.Minute, "per minute"},
	{"24h", 24 * time.Hour, 5 * time.Minute, "per 5 minutes"},
	{"7d", 7 * 24 * time.Hour, time.Hour, "per hour"},
}

const defaultRange = "24h"

// Chart geometry, in SVG user units.
const (
	chartHeight = 160
	barWidth    = 4
	lineHeight  = 120
)

// step is one step of the overview: the shards and minutes summed.
type step struct {
	At                       time.Time
	Succeeded, Failed, Async int64
	Buckets                  []int64
	P50, P99                 string
}

// bar is one stacked bar's rectangles, in chart coordinates.
type bar struct {
	X, W           int
	SY, SH, FY, FH int
	AY, AH         int
	Title          string
}

// overviewPage is the data of overview.html.
type overviewPage struct {
	Range, Label string
	Ranges       []figureRange
	Steps        []step
	Bars         []bar
	ChartWidth   int
	ChartHeight  int
	MaxPerStep   int64
	// P50Line and P99Line are the polylines' points; LineHeight their chart's height.
	P50Line, P99Line string
	LineHeight       int
	LineLabels       []lineLabel

	Deliveries, Succeeded, Failed, Async int64
	SuccessRate                          string
	P50, P99                             string

	PlanQuota, HooksCreated int64
	Percent                 int64
	// High is where the meter turns to a warning: 75 % of the quota.
	High int64
	// TimeAxis labels the charts' x axis, left to right (UTC).
	TimeAxis []string
	// Listening says that a listener takes the project's deliveries now,
	// instead of its domain (docs/listener.md).
	Listening bool
}

// lineLabel is a y-axis label of the lateness chart.
type lineLabel struct {
	Y    int
	Text string
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	rng, ok := rangeNamed(r.URL.Query().Get("range"))
	if !ok {
		Error(w, r, http.StatusBadRequest, "range must be one of 1h, 24h, 7d.")
		return
	}
	u, err := d.Usage.GetProjectUsage(r.Context(), p.ID)
	if err != nil {
		d.fault(w, r, "project usage", err)
		return
	}
	now := time.Now().UTC()
	first := now.Truncate(rng.Step).Add(-rng.Span + rng.Step)
	rows, err := d.Figures.ListDeliveryMinutes(r.Context(), store.ListDeliveryMinutesParams{ProjectID: p.ID, StepSeconds: int32(rng.Step / time.Second), Since: first})
	if err != nil {
		d.fault(w, r, "delivery figures", err)
		return
	}
	page := figures(rng, first, rows)
	page.PlanQuota, page.HooksCreated, page.High = u.PlanQuota, u.HooksCreated, u.PlanQuota*3/4
	if u.PlanQuota > 0 {
		page.Percent = u.HooksCreated * 100 / u.PlanQuota
	}
	presence, err := d.Admin.Presence.ListProjectPresence(r.Context(), p.ID)
	if err != nil {
		d.fault(w, r, "listener presence", err)
		return
	}
	for _, row := range presence {
		page.Listening = page.Listening || row.Live
	}
	RenderStatus(w, r, http.StatusOK, "overview.html", page)
}

func rangeNamed(name string) (figureRange, bool) {
	if name == "" {
		name = defaultRange
	}
	for _, fr := range figureRanges {
		if fr.Name == name {
			return fr, true
		}
	}
	return figureRange{}, false
}

// figures sums rows (every shard of every minute since first) per step of
// rng, and over the whole range.
func figures(rng figureRange, first time.Time, rows []store.ListDeliveryMinutesRow) overviewPage {
	n := int(rng.Span / rng.Step)
	steps := make([]step, n)
	for i := range steps {
		steps[i].At = first.Add(time.Duration(i) * rng.Step)
	}
	var total step
	for _, row := range rows {
		i := int(row.Minute.Sub(first) / rng.Step)
		if i < 0 || i >= n {
			continue
		}
		steps[i].add(row)
		total.add(row)
	}
	page := overviewPage{
		Range: rng.Name, Label: rng.Label, Ranges: figureRanges, Steps: steps,
		Succeeded: total.Succeeded, Failed: total.Failed, Async: total.Async,
		Deliveries:  total.Succeeded + total.Failed + total.Async,
		SuccessRate: "–", P50: percentile(total.Buckets, 0.5), P99: percentile(total.Buckets, 0.99),
		ChartWidth: n * barWidth, ChartHeight: chartHeight, LineHeight: lineHeight,
	}
	if done := total.Succeeded + total.Failed; done > 0 {
		page.SuccessRate = strconv.FormatFloat(float64(total.Succeeded)*100/float64(done), 'f', 2, 64) + " %"
	}
	for i := range steps {
		steps[i].P50, steps[i].P99 = percentile(steps[i].Buckets, 0.5), percentile(steps[i].Buckets, 0.99)
		page.MaxPerStep = max(page.MaxPerStep, steps[i].Succeeded+steps[i].Failed+steps[i].Async)
	}
	page.Bars = bars(steps, page.MaxPerStep)
	page.TimeAxis = timeAxis(first, rng)
	page.P50Line, page.P99Line = latencyLine(steps, 0.5), latencyLine(steps, 0.99)
	for _, i := range []int{0, 4, 9, 14} {
		page.LineLabels = append(page.LineLabels, lineLabel{Y: bucketY(i), Text: "< " + deliverystats.Upper(i).String()})
	}
	return page
}

// timeAxis is five labels spread evenly under the charts: the first
// step's start, the three quarters and the range's end, in UTC, with the
// date when the range spans days.
func timeAxis(first time.Time, rng figureRange) []string {
	layout := "15:04"
	if rng.Span > 24*time.Hour {
		layout = "Jan 2 15:04"
	}
	labels := make([]string, 0, 5)
	for i := range 5 {
		labels = append(labels, first.Add(rng.Span*time.Duration(i)/4).UTC().Format(layout))
	}
	return labels
}

func (s *step) add(row store.ListDeliveryMinutesRow) {
	s.Succeeded += int64(row.Succeeded)
	s.Failed += int64(row.Failed)
	s.Async += int64(row.Async)
	for len(s.Buckets) < len(row.LatenessBuckets) {
		s.Buckets = append(s.Buckets, 0)
	}
	for i, c := range row.LatenessBuckets {
		s.Buckets[i] += c
	}
}

// percentile reads as the bucket's upper bound ("≤ 20ms"), "> 1m0s" for the
// last bucket, "–" when nothing was counted.
func percentile(buckets []int64, p float64) string {
	switch b := deliverystats.PercentileBucket(buckets, p); {
	case b < 0:
		return "–"
	case b == deliverystats.NumBuckets-1:
		return "> " + deliverystats.Upper(b).String()
	default:
		return "≤ " + deliverystats.Percentile(buckets, p).String()
	}
}

// bars stacks succeeded (bottom), failed and async per step, scaled to the
// largest step.
func bars(steps []step, top int64) []bar {
	if top == 0 {
		return nil
	}
	scale := func(v int64) int { return int(v * chartHeight / top) }
	out := make([]bar, 0, len(steps))
	for i, s := range steps {
		if s.Succeeded+s.Failed+s.Async == 0 {
			continue
		}
		b := bar{X: i * barWidth, W: barWidth - 1, SH: scale(s.Succeeded), FH: scale(s.Failed), AH: scale(s.Async)}
		b.SY = chartHeight - b.SH
		b.FY = b.SY - b.FH
		b.AY = b.FY - b.AH
		b.Title = fmt.Sprintf("%s: %d succeeded, %d failed, %d async", s.At.Format("2006-01-02 15:04"), s.Succeeded, s.Failed, s.Async)
		out = append(out, b)
	}
	return out
}

// bucketY is the height of bucket i's bound on the lateness chart: the
// buckets are evenly spaced (their bounds grow about exponentially).
func bucketY(i int) int {
	return lineHeight - (i+1)*lineHeight/deliverystats.NumBuckets
}

// latencyLine is the points of the polyline of percentile p per step, over
// the steps that counted a first attempt.
func latencyLine(steps []step, p float64) string {
	var pts []string
	for i, s := range steps {
		b := deliverystats.PercentileBucket(s.Buckets, p)
		if b < 0 {
			continue
		}
		pts = append(pts, fmt.Sprintf("%d,%d", i*barWidth+barWidth/2, bucketY(b)))
	}
	return strings.Join(pts, " ")
}

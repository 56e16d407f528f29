package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	sundial "github.com/sundial-run/sundial/sdk"
)

// manifest is sundial.toml: the project's settings and sequences as code.
// Pointer fields are optional: left out, the live value is left as it is.
type manifest struct {
	// Project is the id of the project the file describes: a key of
	// another project is refused.
	Project string         `toml:"project"`
	Domain  *string        `toml:"domain"`
	Retry   *manifestRetry `toml:"retry"`
	// OrderingOnFailure is what an ordering key does when one of its hooks
	// fails for good: "continue" or "hold".
	OrderingOnFailure *string `toml:"ordering_on_failure"`
	// FailurePolicy maps failure classes to their actions; a class left
	// out keeps its live action.
	FailurePolicy map[string]string  `toml:"failure_policy"`
	Sequences     []manifestSequence `toml:"sequences"`
}

// manifestRetry is the project's retry policy.
type manifestRetry struct {
	MinRetries    *int     `toml:"min_retries"`
	DelaySecs     *int     `toml:"delay_secs"`
	Strategy      *string  `toml:"strategy"`
	BackoffFactor *float64 `toml:"backoff_factor"`
	MaxDelaySecs  *int     `toml:"max_delay_secs"`
	Jitter        *bool    `toml:"jitter"`
}

type manifestSequence struct {
	Name string `toml:"name"`
	// StartAt left out: the creation time, and on a change the live one.
	StartAt  *instant                `toml:"start_at"`
	EndAt    *instant                `toml:"end_at"`
	CatchUp  string                  `toml:"catch_up"`
	Overlap  string                  `toml:"overlap"`
	Schedule manifestSchedule        `toml:"schedule"`
	Steps    map[string]manifestStep `toml:"steps"`
	// stepOrder is the steps' names in the file's order (a TOML table has
	// none of its own).
	stepOrder []string
}

type manifestSchedule struct {
	Every       string        `toml:"every"`
	Frequency   string        `toml:"frequency"`
	Timezone    string        `toml:"timezone"`
	Time        *manifestTime `toml:"time"`
	DaysOfWeek  []string      `toml:"days_of_week"`
	DaysOfMonth []int         `toml:"days_of_month"`
}

type manifestTime struct {
	Hour   *int `toml:"hour"`
	Minute *int `toml:"minute"`
}

type manifestStep struct {
	Path string `toml:"path"`
	// Data is an inline table, or a string holding a JSON object (for data
	// TOML cannot say, such as null).
	Data          any               `toml:"data"`
	DependsOn     []string          `toml:"depends_on"`
	RetryOverride *manifestOverride `toml:"retry_override"`
}

type manifestOverride struct {
	MinRetries    int     `toml:"min_retries"`
	DelaySecs     int     `toml:"delay_secs"`
	Strategy      string  `toml:"strategy"`
	BackoffFactor float64 `toml:"backoff_factor"`
	MaxDelaySecs  int     `toml:"max_delay_secs"`
	Jitter        bool    `toml:"jitter"`
}

// shape is the keys a table may have: nil for a value, anyKey for a
// table of free names (steps), freeForm for data.
type shape map[string]shape

const anyKey = "*"

var (
	freeForm       = shape{anyKey: nil}
	retryShape     = shape{"min_retries": nil, "delay_secs": nil, "strategy": nil, "backoff_factor": nil, "max_delay_secs": nil, "jitter": nil}
	manifestShape  = shape{"project": nil, "domain": nil, "ordering_on_failure": nil, "retry": retryShape, "failure_policy": {anyKey: nil}, "sequences": sequenceShape}
	sequenceShape  = shape{"name": nil, "start_at": nil, "end_at": nil, "catch_up": nil, "overlap": nil, "schedule": scheduleShape, "steps": {anyKey: stepShape}}
	scheduleShape  = shape{"every": nil, "frequency": nil, "timezone": nil, "time": {"hour": nil, "minute": nil}, "days_of_week": nil, "days_of_month": nil}
	stepShape      = shape{"path": nil, "data": freeForm, "depends_on": nil, "retry_override": retryShape}
	errNotManifest = errors.New("not a sundial.toml")
)

// readManifest reads and checks the file at path.
func readManifest(path string) (manifest, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return manifest{}, fmt.Errorf("--file: %s does not exist (`sundial config init` or `pull` writes one)", path)
	}
	if err != nil {
		return manifest{}, fmt.Errorf("read %s: %w", path, err)
	}
	m, err := parseManifest(string(b))
	if err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// parseManifest decodes a file strictly (an unknown key is an error naming
// it) and checks its structure; the API checks the values' bounds.
func parseManifest(text string) (manifest, error) {
	var m manifest
	md, err := toml.Decode(text, &m)
	if err != nil {
		return m, err
	}
	orders, err := checkKeys(md.Keys())
	if err != nil {
		return m, err
	}
	for i := range m.Sequences {
		var order []string
		if i < len(orders) {
			order = orders[i]
		}
		m.Sequences[i].stepOrder = stepOrder(order, m.Sequences[i].Steps)
	}
	if problems := m.check(); len(problems) > 0 {
		return m, fmt.Errorf("%w:\n  %s", errNotManifest, strings.Join(problems, "\n  "))
	}
	return m, nil
}

// checkKeys walks the file's keys in their order against manifestShape,
// and returns each sequence's step names in the file's order.
func checkKeys(keys []toml.Key) ([][]string, error) {
	var orders [][]string
	for _, k := range keys {
		if len(k) == 1 && k[0] == "sequences" {
			orders = append(orders, nil)
		}
		if err := checkKey(k, orders); err != nil {
			return nil, err
		}
		if len(k) == 3 && k[0] == "sequences" && k[1] == "steps" && len(orders) > 0 {
			orders[len(orders)-1] = append(orders[len(orders)-1], k[2])
		}
	}
	return orders, nil
}

func checkKey(k toml.Key, orders [][]string) error {
	sh := manifestShape
	path := ""
	for i, part := range k {
		if path != "" {
			path += "."
		}
		path += part
		if i == 0 && part == "sequences" {
			path = fmt.Sprintf("sequences[%d]", max(len(orders)-1, 0))
		}
		next, ok := sh[part]
		if !ok {
			next, ok = sh[anyKey]
		}
		if !ok {
			return fmt.Errorf("%s: unknown key", path)
		}
		if next == nil {
			if _, free := sh[anyKey]; free && i+1 < len(k) {
				return nil // inside data: anything goes
			}
			if i+1 < len(k) {
				return fmt.Errorf("%s: unknown key", path+"."+k[i+1])
			}
			return nil
		}
		sh = next
	}
	return nil
}

// stepOrder is the steps' names as the file's keys gave them, then (in
// name order) any step only a dotted key or a sub-table defined.
func stepOrder(seen []string, steps map[string]manifestStep) []string {
	var order []string
	for _, name := range seen {
		if _, ok := steps[name]; ok && !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(steps)) {
		if !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	return order
}

// The values the file checks itself (the API has the same).
var (
	frequencies = []string{sundial.FrequencyHourly, sundial.FrequencyDaily, sundial.FrequencyWeekly, sundial.FrequencyMonthly}
	catchUps    = []string{sundial.CatchUpLatest, sundial.CatchUpAll, sundial.CatchUpNone}
	overlaps    = []string{sundial.OverlapAllow, sundial.OverlapSkip}
	orderings   = []string{sundial.OrderingContinue, sundial.OrderingHold}
)

// instant is start_at or end_at: a TOML date-time, which must have an
// offset (check says so, naming the key).
type instant struct {
	time.Time
	local bool
}

// UnmarshalTOML takes the parsed value as it is: decoded into a time.Time
// field, a date-time without an offset would silently become local time.
func (i *instant) UnmarshalTOML(v any) error {
	t, ok := v.(time.Time)
	if !ok {
		return fmt.Errorf("a %T is not a date-time such as 2030-01-02T09:00:00Z", v)
	}
	// The decoder gives a date-time without an offset a zone of its own.
	name := t.Location().String()
	i.Time, i.local = t, name == "datetime-local" || name == "date-local" || name == "time-local"
	return nil
}

// check lists the file's structural problems, each naming its key.
func (m manifest) check() []string {
	var p []string
	add := func(key, format string, args ...any) { p = append(p, key+": "+fmt.Sprintf(format, args...)) }
	if m.Project == "" {
		add("project", "is required: the id of the project the file describes")
	}
	if o := m.OrderingOnFailure; o != nil && !slices.Contains(orderings, *o) {
		add("ordering_on_failure", "%q is not one of %s", *o, strings.Join(orderings, ", "))
	}
	names := map[string]int{}
	for i, s := range m.Sequences {
		key := fmt.Sprintf("sequences[%d]", i)
		if s.Name == "" {
			add(key+".name", "is required")
		} else if j, dup := names[s.Name]; dup {
			add(key+".name", "%q is the name of sequences[%d] too", s.Name, j)
		} else {
			names[s.Name] = i
		}
		for _, t := range []struct {
			k string
			v *instant
		}{{"start_at", s.StartAt}, {"end_at", s.EndAt}} {
			if t.v != nil && t.v.local {
				add(key+"."+t.k, "needs an offset, e.g. 2030-01-02T09:00:00Z")
			}
		}
		if s.CatchUp != "" && !slices.Contains(catchUps, s.CatchUp) {
			add(key+".catch_up", "%q is not one of %s", s.CatchUp, strings.Join(catchUps, ", "))
		}
		if s.Overlap != "" && !slices.Contains(overlaps, s.Overlap) {
			add(key+".overlap", "%q is not one of %s", s.Overlap, strings.Join(overlaps, ", "))
		}
		p = append(p, s.Schedule.check(key+".schedule")...)
		p = append(p, s.checkSteps(key)...)
	}
	return p
}

func (sc manifestSchedule) check(key string) []string {
	var p []string
	calendar := sc.Frequency != "" || sc.Timezone != "" || sc.Time != nil || sc.DaysOfWeek != nil || sc.DaysOfMonth != nil
	switch {
	case sc.Every != "" && calendar:
		p = append(p, key+": every, or a calendar (frequency, timezone, time...), not both")
	case sc.Every == "" && sc.Frequency == "":
		p = append(p, key+": give every, or frequency and timezone")
	case sc.Every == "" && !slices.Contains(frequencies, sc.Frequency):
		p = append(p, fmt.Sprintf("%s.frequency: %q is not one of %s", key, sc.Frequency, strings.Join(frequencies, ", ")))
	}
	if sc.Time != nil && sc.Time.Minute == nil {
		p = append(p, key+".time.minute: is required")
	}
	return p
}

func (s manifestSequence) checkSteps(key string) []string {
	var p []string
	if len(s.Steps) == 0 {
		p = append(p, key+".steps: give at least one [sequences.steps.<name>] table")
	}
	for _, name := range s.stepOrder {
		st := s.Steps[name]
		skey := key + ".steps." + name
		if st.Path == "" {
			p = append(p, skey+".path: is required")
		}
		if _, err := st.data(); err != nil {
			p = append(p, skey+".data: "+err.Error())
		}
		for _, d := range st.DependsOn {
			if _, ok := s.Steps[d]; !ok {
				p = append(p, fmt.Sprintf("%s.depends_on: %q is not a step of this sequence", skey, d))
			}
		}
	}
	return p
}

// data is the step's data as the API takes it: a JSON object.
func (st manifestStep) data() (any, error) {
	switch d := st.Data.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return d, nil
	case string:
		var obj map[string]any
		if err := json.Unmarshal([]byte(d), &obj); err != nil || obj == nil {
			return nil, errors.New("a string here must hold a JSON object")
		}
		return json.RawMessage(d), nil
	default:
		return nil, fmt.Errorf("is a %T: give an inline table, or a string holding a JSON object", d)
	}
}

// requests are the file's sequences as the API takes them.
func (m manifest) requests() []sundial.SequenceRequest {
	reqs := make([]sundial.SequenceRequest, len(m.Sequences))
	for i, s := range m.Sequences {
		reqs[i] = s.request()
	}
	return reqs
}

func (s manifestSequence) request() sundial.SequenceRequest {
	req := sundial.SequenceRequest{Name: s.Name, CatchUp: s.CatchUp, Overlap: s.Overlap, Schedule: s.Schedule.schedule()}
	if s.StartAt != nil {
		req.StartAt = s.StartAt.Time
	}
	if s.EndAt != nil {
		req.EndAt = s.EndAt.Time
	}
	for _, name := range s.stepOrder {
		st := s.Steps[name]
		data, _ := st.data() // checked by parseManifest
		step := sundial.SequenceStep{Name: name, Path: st.Path, Data: data, DependsOn: st.DependsOn}
		if o := st.RetryOverride; o != nil {
			step.RetryOverride = &sundial.RetryOverride{MinRetries: o.MinRetries, DelaySecs: o.DelaySecs,
				Strategy: o.Strategy, BackoffFactor: o.BackoffFactor, MaxDelaySecs: o.MaxDelaySecs, Jitter: o.Jitter}
		}
		req.Steps = append(req.Steps, step)
	}
	return req
}

func (sc manifestSchedule) schedule() sundial.SequenceSchedule {
	out := sundial.SequenceSchedule{Every: sc.Every, Frequency: sc.Frequency, Timezone: sc.Timezone,
		DaysOfWeek: sc.DaysOfWeek, DaysOfMonth: sc.DaysOfMonth}
	if sc.Time != nil && sc.Time.Minute != nil {
		out.Time = &sundial.ScheduleTime{Hour: sc.Time.Hour, Minute: *sc.Time.Minute}
	}
	return out
}

// retryPatch is the file's retry policy as a change of the project.
func (r *manifestRetry) patch() *sundial.ProjectRetryPolicyPatch {
	if r == nil {
		return nil
	}
	return &sundial.ProjectRetryPolicyPatch{MinRetries: r.MinRetries, DelaySecs: r.DelaySecs, Strategy: r.Strategy,
		BackoffFactor: r.BackoffFactor, MaxDelaySecs: r.MaxDelaySecs, Jitter: r.Jitter}
}

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	sundial "github.com/sundial-run/sundial/sdk"
)

// liveManifest is the live state as a file: what `config pull` writes. It
// has no secret: the project's authorization header and keys are not in
// the API's answers, and nothing else of the project is written. Of the
// failure policy, the classes that are not retried (the default); the
// ordering on failure when it is not "continue" (the default).
func liveManifest(p sundial.Project, seqs []sundial.Sequence) manifest {
	r := p.RetryPolicy
	m := manifest{
		Project: p.ID, Domain: &p.Domain,
		Retry: &manifestRetry{MinRetries: &r.MinRetries, DelaySecs: &r.DelaySecs, Strategy: &r.Strategy,
			BackoffFactor: &r.BackoffFactor, MaxDelaySecs: &r.MaxDelaySecs, Jitter: &r.Jitter},
	}
	if p.OrderingOnFailure != "" && p.OrderingOnFailure != sundial.OrderingContinue {
		m.OrderingOnFailure = &p.OrderingOnFailure
	}
	for class, action := range p.FailurePolicy {
		if action != "retry" {
			if m.FailurePolicy == nil {
				m.FailurePolicy = map[string]string{}
			}
			m.FailurePolicy[class] = action
		}
	}
	for _, seq := range seqs {
		m.Sequences = append(m.Sequences, liveSequence(seq))
	}
	return m
}

func liveSequence(seq sundial.Sequence) manifestSequence {
	out := manifestSequence{Name: seq.Name, StartAt: &instant{Time: seq.StartAt.UTC()}, CatchUp: seq.CatchUp, Overlap: seq.Overlap,
		Steps: map[string]manifestStep{}}
	if !seq.EndAt.IsZero() {
		out.EndAt = &instant{Time: seq.EndAt.UTC()}
	}
	sc := seq.Schedule
	out.Schedule = manifestSchedule{Every: sc.Every, Frequency: sc.Frequency, Timezone: sc.Timezone,
		DaysOfWeek: sc.DaysOfWeek, DaysOfMonth: sc.DaysOfMonth}
	if sc.Time != nil {
		minute := sc.Time.Minute
		out.Schedule.Time = &manifestTime{Hour: sc.Time.Hour, Minute: &minute}
	}
	for _, st := range seq.Steps {
		step := manifestStep{Path: st.Path, Data: liveData(st.Data), DependsOn: st.DependsOn}
		if o := st.RetryOverride; o != nil {
			step.RetryOverride = &manifestOverride{MinRetries: o.MinRetries, DelaySecs: o.DelaySecs, Strategy: o.Strategy,
				BackoffFactor: o.BackoffFactor, MaxDelaySecs: o.MaxDelaySecs, Jitter: o.Jitter}
		}
		out.Steps[st.Name] = step
		out.stepOrder = append(out.stepOrder, st.Name)
	}
	return out
}

// liveData is a step's data for the file: a table, or a JSON string when
// it holds a null (TOML has none).
func liveData(data any) any {
	obj, ok := canonicalJSON(data).(map[string]any)
	if !ok || len(obj) == 0 {
		return nil
	}
	if hasNull(obj) {
		b, _ := json.Marshal(obj)
		return string(b)
	}
	return obj
}

func hasNull(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return slices.ContainsFunc(mapsValues(v), hasNull)
	case []any:
		return slices.ContainsFunc(v, hasNull)
	}
	return false
}

func mapsValues(m map[string]any) []any {
	out := make([]any, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// canonicalJSON is v through JSON: maps, []any, float64, string, bool, nil.
func canonicalJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

// encode writes m as TOML, in the order the reference gives: the
// project, its retry policy, then each sequence with its schedule and its
// steps in their order.
func (m manifest) encode(header string) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s = %s\n", k, tomlValue(v)) }
	kv("project", m.Project)
	if m.Domain != nil {
		kv("domain", *m.Domain)
	}
	if m.OrderingOnFailure != nil {
		kv(orderingOnFailureKey, *m.OrderingOnFailure)
	}
	if r := m.Retry; r != nil {
		b.WriteString("\n[retry]\n")
		optional(kv, "min_retries", r.MinRetries)
		optional(kv, "delay_secs", r.DelaySecs)
		optional(kv, "strategy", r.Strategy)
		optional(kv, "backoff_factor", r.BackoffFactor)
		optional(kv, "max_delay_secs", r.MaxDelaySecs)
		optional(kv, "jitter", r.Jitter)
	}
	if len(m.FailurePolicy) > 0 {
		b.WriteString("\n[failure_policy]\n")
		for _, class := range slices.Sorted(maps.Keys(m.FailurePolicy)) {
			// Quoted: a class may be all digits ("410").
			kv(strconv.Quote(class), m.FailurePolicy[class])
		}
	}
	for _, s := range m.Sequences {
		b.WriteString("\n[[sequences]]\n")
		kv("name", s.Name)
		if s.StartAt != nil {
			kv("start_at", s.StartAt.Time)
		}
		if s.EndAt != nil {
			kv("end_at", s.EndAt.Time)
		}
		if s.CatchUp != "" {
			kv("catch_up", s.CatchUp)
		}
		if s.Overlap != "" {
			kv("overlap", s.Overlap)
		}
		s.Schedule.encode(&b, kv)
		for _, name := range s.stepOrder {
			st := s.Steps[name]
			fmt.Fprintf(&b, "\n[sequences.steps.%s]\n", tomlKey(name))
			kv("path", st.Path)
			if st.Data != nil {
				kv("data", st.Data)
			}
			if len(st.DependsOn) > 0 {
				kv("depends_on", st.DependsOn)
			}
			if o := st.RetryOverride; o != nil {
				kv("retry_override", o.table())
			}
		}
	}
	return b.Bytes()
}

func (sc manifestSchedule) encode(b *bytes.Buffer, kv func(string, any)) {
	b.WriteString("\n[sequences.schedule]\n")
	if sc.Every != "" {
		kv("every", sc.Every)
		return
	}
	kv("frequency", sc.Frequency)
	if sc.Timezone != "" {
		kv("timezone", sc.Timezone)
	}
	if t := sc.Time; t != nil && t.Minute != nil {
		kv("time", timeTable(t.Hour, *t.Minute))
	}
	if len(sc.DaysOfWeek) > 0 {
		kv("days_of_week", sc.DaysOfWeek)
	}
	if len(sc.DaysOfMonth) > 0 {
		kv("days_of_month", sc.DaysOfMonth)
	}
}

// table is the override as an inline table, in the reference's order;
// zero optional fields are left out.
func (o manifestOverride) table() inlineTable {
	t := inlineTable{{"min_retries", o.MinRetries}, {"delay_secs", o.DelaySecs}, {"strategy", o.Strategy}}
	if o.BackoffFactor != 0 {
		t = append(t, keyValue{"backoff_factor", o.BackoffFactor})
	}
	if o.MaxDelaySecs != 0 {
		t = append(t, keyValue{"max_delay_secs", o.MaxDelaySecs})
	}
	if o.Jitter {
		t = append(t, keyValue{"jitter", true})
	}
	return t
}

// timeTable is a schedule's time as an inline table: hour (unless
// hourly), then minute.
func timeTable(hour *int, minute int) inlineTable {
	if hour == nil {
		return inlineTable{{"minute", minute}}
	}
	return inlineTable{{"hour", *hour}, {"minute", minute}}
}

// inlineTable is an inline table in the order of its keys.
type inlineTable []keyValue

type keyValue struct {
	key   string
	value any
}

func optional[T any](kv func(string, any), k string, v *T) {
	if v != nil {
		kv(k, *v)
	}
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return tomlString(k)
}

// tomlString is s as a TOML basic string: JSON's escapes are TOML's, but
// for DEL, which TOML wants escaped.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.ReplaceAll(strings.TrimSuffix(b.String(), "\n"), "\x7f", `\u007f`)
}

// tomlValue is v as a TOML value, tables inline with their keys sorted.
func tomlValue(v any) string {
	switch v := v.(type) {
	case string:
		return tomlString(v)
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return tomlFloat(v)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case []string:
		return tomlArray(v)
	case []int:
		return tomlArray(v)
	case []any:
		return tomlArray(v)
	case map[string]any:
		t := make(inlineTable, 0, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			t = append(t, keyValue{k, v[k]})
		}
		return tomlValue(t)
	case inlineTable:
		if len(v) == 0 {
			return "{}"
		}
		parts := make([]string, len(v))
		for i, kv := range v {
			parts[i] = tomlKey(kv.key) + " = " + tomlValue(kv.value)
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	return tomlString(fmt.Sprint(v))
}

func tomlArray[T any](vs []T) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = tomlValue(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// tomlFloat writes a whole number as an integer (JSON has one kind of
// number; the file reads better with 3 than 3.0), else as a float.
func tomlFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

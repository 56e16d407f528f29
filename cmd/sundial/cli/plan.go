package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	sundial "github.com/sundial-run/sundial/sdk"
)

// The operations of a plan.
const (
	opCreate = "create"
	opUpdate = "update"
	opDelete = "delete"
)

// plan is what it takes to make the live state the file's.
type plan struct {
	Changes []change `json:"changes"`
}

// change is one operation: on the project (update) or on a sequence.
type change struct {
	Op   string `json:"op"`
	Kind string `json:"kind"` // "project" or "sequence"
	Name string `json:"name"`
	// ID is the live sequence's, for updates and deletes.
	ID     string        `json:"id,omitempty"`
	Fields []fieldChange `json:"fields,omitempty"`

	request sundial.SequenceRequest
	patch   sundial.ProjectPatch
}

// fieldChange is a field's live value and the file's, as TOML; empty: not
// set.
type fieldChange struct {
	Field string `json:"field"`
	Live  string `json:"live,omitempty"`
	File  string `json:"file,omitempty"`
}

func (p plan) count(op string) int {
	n := 0
	for _, c := range p.Changes {
		if c.Op == op {
			n++
		}
	}
	return n
}

func (p plan) deletes() []change {
	return slices.DeleteFunc(slices.Clone(p.Changes), func(c change) bool { return c.Op != opDelete })
}

// buildPlan compares the file with the live project and sequences. A
// sequence is known by its name; one live but not in the file is deleted.
func buildPlan(m manifest, project sundial.Project, live []sundial.Sequence) plan {
	var p plan
	if c, ok := projectChange(m, project); ok {
		p.Changes = append(p.Changes, c)
	}
	byName := map[string]sundial.Sequence{}
	for _, seq := range live {
		byName[seq.Name] = seq
	}
	for _, s := range m.Sequences {
		req := s.request()
		seq, exists := byName[s.Name]
		if !exists {
			p.Changes = append(p.Changes, change{Op: opCreate, Kind: "sequence", Name: s.Name,
				Fields: diffFields(nil, sequenceFields(req, true)), request: req})
			continue
		}
		delete(byName, s.Name)
		// Left out of the file, start_at stays the live one.
		keepStart := s.StartAt == nil
		if keepStart {
			req.StartAt = seq.StartAt
		}
		fields := diffFields(sequenceFields(seq.Request(), !keepStart), sequenceFields(req, !keepStart))
		if len(fields) > 0 {
			p.Changes = append(p.Changes, change{Op: opUpdate, Kind: "sequence", Name: s.Name, ID: seq.ID,
				Fields: fields, request: req})
		}
	}
	for _, seq := range live {
		if _, gone := byName[seq.Name]; gone {
			p.Changes = append(p.Changes, change{Op: opDelete, Kind: "sequence", Name: seq.Name, ID: seq.ID})
		}
	}
	return p
}

// projectChange is the change of the project's domain, retry policy,
// failure policy and ordering on failure, the fields the file sets only.
func projectChange(m manifest, project sundial.Project) (change, bool) {
	live, file := map[string]string{}, map[string]string{}
	set := func(k string, lv any, fv any) {
		live[k], file[k] = tomlValue(lv), tomlValue(fv)
	}
	if m.Domain != nil {
		set("domain", project.Domain, *m.Domain)
	}
	if m.OrderingOnFailure != nil {
		set(orderingOnFailureKey, project.OrderingOnFailure, *m.OrderingOnFailure)
	}
	if r := m.Retry; r != nil {
		lr := project.RetryPolicy
		setOpt(set, "retry.min_retries", lr.MinRetries, r.MinRetries)
		setOpt(set, "retry.delay_secs", lr.DelaySecs, r.DelaySecs)
		setOpt(set, "retry.strategy", lr.Strategy, r.Strategy)
		setOpt(set, "retry.backoff_factor", lr.BackoffFactor, r.BackoffFactor)
		setOpt(set, "retry.max_delay_secs", lr.MaxDelaySecs, r.MaxDelaySecs)
		setOpt(set, "retry.jitter", lr.Jitter, r.Jitter)
	}
	for class, action := range m.FailurePolicy {
		set(failurePolicyKey+class, project.FailurePolicy[class], action)
	}
	fields := diffFields(live, file)
	if len(fields) == 0 {
		return change{}, false
	}
	c := change{Op: opUpdate, Kind: "project", Name: project.Name, Fields: fields}
	for _, f := range fields {
		switch {
		case f.Field == "domain":
			c.patch.Domain = m.Domain
		case f.Field == orderingOnFailureKey:
			c.patch.OrderingOnFailure = m.OrderingOnFailure
		case strings.HasPrefix(f.Field, failurePolicyKey):
			c.patch.FailurePolicy = m.FailurePolicy
		default:
			c.patch.RetryPolicy = m.Retry.patch()
		}
	}
	return c, true
}

// failurePolicyKey is the prefix of a failure class's key in the file.
const failurePolicyKey = "failure_policy."

// orderingOnFailureKey is the file's key of the project's orderingOnFailure.
const orderingOnFailureKey = "ordering_on_failure"

func setOpt[T any](set func(string, any, any), k string, live T, file *T) {
	if file != nil {
		set(k, live, *file)
	}
}

// sequenceFields flattens a definition into its fields, as TOML values,
// with the API's defaults written out so that a field left out compares
// equal to its default.
func sequenceFields(req sundial.SequenceRequest, withStart bool) map[string]string {
	f := map[string]string{}
	put := func(k string, v any, set bool) {
		if set {
			f[k] = tomlValue(v)
		}
	}
	sc := req.Schedule
	put("schedule.every", sc.Every, sc.Every != "")
	put("schedule.frequency", sc.Frequency, sc.Frequency != "")
	put("schedule.timezone", sc.Timezone, sc.Timezone != "")
	if sc.Time != nil {
		put("schedule.time", timeTable(sc.Time.Hour, sc.Time.Minute), true)
	}
	put("schedule.days_of_week", sc.DaysOfWeek, len(sc.DaysOfWeek) > 0)
	put("schedule.days_of_month", sc.DaysOfMonth, len(sc.DaysOfMonth) > 0)
	put("start_at", req.StartAt, withStart && !req.StartAt.IsZero())
	put("end_at", req.EndAt, !req.EndAt.IsZero())
	put("catch_up", orDefault(req.CatchUp, sundial.CatchUpLatest), true)
	put("overlap", orDefault(req.Overlap, sundial.OverlapAllow), true)
	for _, st := range req.Steps {
		k := "steps." + st.Name + "."
		put(k+"path", st.Path, true)
		data, _ := json.Marshal(canonicalJSON(st.Data))
		put(k+"data", string(data), true)
		deps := slices.Sorted(slices.Values(st.DependsOn))
		put(k+"depends_on", deps, len(deps) > 0)
		if o := st.RetryOverride; o != nil {
			mo := manifestOverride{MinRetries: o.MinRetries, DelaySecs: o.DelaySecs, Strategy: o.Strategy,
				BackoffFactor: o.BackoffFactor, MaxDelaySecs: o.MaxDelaySecs, Jitter: o.Jitter}
			if mo.BackoffFactor == 0 {
				mo.BackoffFactor = defaultBackoffFactor
			}
			put(k+"retry_override", mo.table(), true)
		}
	}
	return f
}

// defaultBackoffFactor is the API's, which it writes into an override
// that leaves it out.
const defaultBackoffFactor = 2.0

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// diffFields lists the fields whose values differ, sorted by name.
func diffFields(live, file map[string]string) []fieldChange {
	keys := slices.Sorted(maps.Keys(live))
	for k := range file {
		if _, ok := live[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []fieldChange
	for _, k := range keys {
		if live[k] != file[k] {
			out = append(out, fieldChange{Field: k, Live: live[k], File: file[k]})
		}
	}
	return out
}

// print writes the plan for a reader: + create, ~ change, - delete.
func (p plan) print(w io.Writer) {
	if len(p.Changes) == 0 {
		fmt.Fprintln(w, "No changes: the live state is the file's.")
		return
	}
	marks := map[string]string{opCreate: "+", opUpdate: "~", opDelete: "-"}
	for _, c := range p.Changes {
		head := fmt.Sprintf("%s %s %s", marks[c.Op], c.Kind, c.Name)
		if c.ID != "" {
			head += " (" + c.ID + ")"
		}
		fmt.Fprintln(w, head)
		for _, f := range c.Fields {
			switch {
			case c.Op == opCreate:
				fmt.Fprintf(w, "    %s = %s\n", f.Field, f.File)
			case f.Live == "":
				fmt.Fprintf(w, "    + %s = %s\n", f.Field, f.File)
			case f.File == "":
				fmt.Fprintf(w, "    - %s = %s\n", f.Field, f.Live)
			default:
				fmt.Fprintf(w, "    ~ %s: %s -> %s\n", f.Field, f.Live, f.File)
			}
		}
	}
	fmt.Fprintf(w, "Plan: %d to create, %d to change, %d to delete.\n",
		p.count(opCreate), p.count(opUpdate), p.count(opDelete))
}

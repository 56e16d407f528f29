package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sundial "github.com/sundial-run/sundial/sdk"
)

// etlManifest is the reference's example: a weekday 09:00 Europe/Paris
// chain extract -> transform -> load.
const etlManifest = `
project = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
domain = "etl.example.com"

[retry]
min_retries = 4
delay_secs = 20
strategy = "exponential"
backoff_factor = 2
max_delay_secs = 900
jitter = true

[[sequences]]
name = "nightly-etl"
start_at = 2030-01-01T00:00:00Z
catch_up = "none"
overlap = "skip"

[sequences.schedule]
frequency = "weekly"
timezone = "Europe/Paris"
time = { hour = 9, minute = 0 }
days_of_week = ["mon", "tue", "wed", "thu", "fri"]

[sequences.steps.extract]
path = "/etl/extract"
data = { source = "crm", tables = ["accounts", "deals"], limits = { rows = 5000, ratio = 0.5 } }

[sequences.steps.transform]
path = "/etl/transform"
depends_on = ["extract"]

[sequences.steps.load]
path = "/etl/load"
depends_on = ["transform"]
retry_override = { min_retries = 5, delay_secs = 30, strategy = "fixed" }

[[sequences]]
name = "heartbeat"

[sequences.schedule]
every = "15m"

[sequences.steps.ping]
path = "/ping"
data = '{"note": null}'
`

func TestManifestMapsToSequenceRequests(t *testing.T) {
	t.Parallel()
	m, err := parseManifest(etlManifest)
	require.NoError(t, err)
	require.Equal(t, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", m.Project)
	require.Equal(t, "etl.example.com", *m.Domain)
	require.InDelta(t, 2.0, *m.Retry.BackoffFactor, 0, "an integer where a float is wanted")

	reqs := m.requests()
	require.Len(t, reqs, 2)
	etl := reqs[0]
	require.Equal(t, "nightly-etl", etl.Name)
	require.Equal(t, sundial.SequenceSchedule{Frequency: "weekly", Timezone: "Europe/Paris", Time: sundial.At(9, 0),
		DaysOfWeek: []string{"mon", "tue", "wed", "thu", "fri"}}, etl.Schedule)
	require.True(t, etl.StartAt.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
	require.Equal(t, "none", etl.CatchUp)
	require.Equal(t, "skip", etl.Overlap)
	names := []string{}
	for _, st := range etl.Steps {
		names = append(names, st.Name)
	}
	require.Equal(t, []string{"extract", "transform", "load"}, names, "the file's order")
	data, err := json.Marshal(etl.Steps[0].Data)
	require.NoError(t, err)
	require.JSONEq(t, `{"source": "crm", "tables": ["accounts", "deals"], "limits": {"rows": 5000, "ratio": 0.5}}`, string(data))
	require.Equal(t, []string{"transform"}, etl.Steps[2].DependsOn)
	require.Equal(t, &sundial.RetryOverride{MinRetries: 5, DelaySecs: 30, Strategy: "fixed"}, etl.Steps[2].RetryOverride)
	data, err = json.Marshal(etl.Steps[1].Data)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(data), "data left out is an empty object")

	beat := reqs[1]
	require.Equal(t, sundial.SequenceSchedule{Every: "15m"}, beat.Schedule)
	require.True(t, beat.StartAt.IsZero())
	data, err = json.Marshal(beat.Steps[0].Data)
	require.NoError(t, err)
	require.JSONEq(t, `{"note": null}`, string(data))
}

// asLive is what the API answers for req: its JSON read back as a
// Sequence (data as map[string]any, numbers float64), the defaults set.
func asLive(t *testing.T, id string, req sundial.SequenceRequest) sundial.Sequence {
	t.Helper()
	b, err := json.Marshal(req)
	require.NoError(t, err)
	var seq sundial.Sequence
	require.NoError(t, json.Unmarshal(b, &seq))
	seq.ID, seq.Status = id, sundial.SequenceActive
	if seq.StartAt.IsZero() {
		seq.StartAt = time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC)
	}
	seq.CatchUp, seq.Overlap = orDefault(seq.CatchUp, sundial.CatchUpLatest), orDefault(seq.Overlap, sundial.OverlapAllow)
	for i, st := range seq.Steps {
		if o := st.RetryOverride; o != nil && o.BackoffFactor == 0 {
			seq.Steps[i].RetryOverride.BackoffFactor = defaultBackoffFactor
		}
	}
	return seq
}

func TestManifestRoundTrip(t *testing.T) {
	t.Parallel()
	m, err := parseManifest(etlManifest)
	require.NoError(t, err)
	project := sundial.Project{ID: m.Project, Name: "acme", Domain: *m.Domain, RetryPolicy: sundial.ProjectRetryPolicy{
		MinRetries: 4, DelaySecs: 20, Strategy: "exponential", BackoffFactor: 2, MaxDelaySecs: 900, Jitter: true}}
	var live []sundial.Sequence
	for i, req := range m.requests() {
		live = append(live, asLive(t, "id-"+string(rune('a'+i)), req))
	}
	require.Empty(t, buildPlan(m, project, live).Changes, "the file is the live state")

	// Pulled, the file reads back to the same requests, and compares
	// equal to the live state.
	text := string(liveManifest(project, live).encode("# pulled\n"))
	pulled, err := parseManifest(text)
	require.NoError(t, err, text)
	require.Empty(t, buildPlan(pulled, project, live).Changes, text)
	require.Contains(t, text, `data = "{\"note\":null}"`, "data with a null is a JSON string")
	require.Contains(t, text, "time = { hour = 9, minute = 0 }")
	require.Contains(t, text, `data = { limits = { ratio = 0.5, rows = 5000 }, source = "crm", tables = ["accounts", "deals"] }`)
	require.Contains(t, text, "backoff_factor = 2\n")
	require.Contains(t, text, `retry_override = { min_retries = 5, delay_secs = 30, strategy = "fixed", backoff_factor = 2 }`)
	again := pulled.requests()
	for i, req := range m.requests() {
		want, got := asLive(t, "x", req).Request(), asLive(t, "x", again[i]).Request()
		require.Equal(t, want, got)
	}
}

func TestPlanShowsCreatesChangesAndDeletes(t *testing.T) {
	t.Parallel()
	m, err := parseManifest(etlManifest)
	require.NoError(t, err)
	project := sundial.Project{ID: m.Project, Domain: "old.example.com", RetryPolicy: sundial.ProjectRetryPolicy{
		MinRetries: 4, DelaySecs: 20, Strategy: "exponential", BackoffFactor: 2, MaxDelaySecs: 900, Jitter: false}}
	etl := asLive(t, "etl-id", m.requests()[0])
	etl.Steps[2].Path = "/etl/load-v1"
	etl.Steps[0].DependsOn = nil
	gone := asLive(t, "gone-id", sundial.SequenceRequest{Name: "gone", Schedule: sundial.SequenceSchedule{Every: "1h"},
		Steps: []sundial.SequenceStep{{Name: "a", Path: "/a", Data: map[string]any{}}}})

	p := buildPlan(m, project, []sundial.Sequence{etl, gone})
	require.Len(t, p.Changes, 4)
	require.Equal(t, change{Op: opUpdate, Kind: "project", Fields: []fieldChange{
		{Field: "domain", Live: `"old.example.com"`, File: `"etl.example.com"`},
		{Field: "retry.jitter", Live: "false", File: "true"},
	}}, withoutPayload(p.Changes[0]))
	require.Equal(t, "etl.example.com", *p.Changes[0].patch.Domain)
	require.Equal(t, change{Op: opUpdate, Kind: "sequence", Name: "nightly-etl", ID: "etl-id", Fields: []fieldChange{
		{Field: "steps.load.path", Live: `"/etl/load-v1"`, File: `"/etl/load"`},
	}}, withoutPayload(p.Changes[1]))
	require.Equal(t, opCreate, p.Changes[2].Op)
	require.Equal(t, "heartbeat", p.Changes[2].Name)
	require.Equal(t, change{Op: opDelete, Kind: "sequence", Name: "gone", ID: "gone-id"}, withoutPayload(p.Changes[3]))
	require.Equal(t, []change{withoutPayload(p.Changes[3])}, mapChanges(p.deletes(), withoutPayload))
}

func withoutPayload(c change) change {
	c.request, c.patch = sundial.SequenceRequest{}, sundial.ProjectPatch{}
	return c
}

func mapChanges(cs []change, f func(change) change) []change {
	out := make([]change, len(cs))
	for i, c := range cs {
		out[i] = f(c)
	}
	return out
}

func TestPlanKeepsTheLiveStartAtWhenTheFileHasNone(t *testing.T) {
	t.Parallel()
	m, err := parseManifest(etlManifest)
	require.NoError(t, err)
	beat := asLive(t, "beat-id", m.requests()[1])
	beat.Schedule.Every = "30m"
	p := buildPlan(manifest{Project: "p", Sequences: m.Sequences[1:]}, sundial.Project{ID: "p"}, []sundial.Sequence{beat})
	require.Len(t, p.Changes, 1)
	require.Equal(t, []fieldChange{{Field: "schedule.every", Live: `"30m"`, File: `"15m"`}}, p.Changes[0].Fields)
	require.True(t, p.Changes[0].request.StartAt.Equal(beat.StartAt), "the anchor stays")
}

func TestManifestFindsStepsHoweverTheyAreWritten(t *testing.T) {
	t.Parallel()
	m, err := parseManifest(`project = "p"
[[sequences]]
name = "a"
[sequences.schedule]
every = "1h"
[sequences.steps.zulu]
path = "/z"
[sequences.steps.bravo.data]
n = 1
[sequences.steps.bravo]
path = "/b"
[sequences.steps.alpha.data]
n = 2
`)
	require.Error(t, err, "alpha has no path")
	require.ErrorContains(t, err, "sequences[0].steps.alpha.path: is required")
	require.Equal(t, []string{"zulu", "bravo", "alpha"}, m.Sequences[0].stepOrder)
	data, err := json.Marshal(m.Sequences[0].request().Steps[1].Data)
	require.NoError(t, err)
	require.JSONEq(t, `{"n": 1}`, string(data))
}

func TestManifestRefusesUnknownKeysNamingThem(t *testing.T) {
	t.Parallel()
	base := "project = \"p\"\n[[sequences]]\nname = \"a\"\n[sequences.schedule]\nevery = \"1h\"\n[sequences.steps.s]\npath = \"/s\"\n"
	cases := map[string]string{
		"sequences[0].schedule.hour: unknown key":                   "project = \"p\"\n[[sequences]]\nname = \"b\"\n[sequences.schedule]\nfrequency = \"daily\"\nhour = 9\n",
		"projet: unknown key":                                       "projet = \"p\"\n",
		"retry.retries: unknown key":                                "project = \"p\"\n[retry]\nretries = 3\n",
		"sequences[0].steps.s.header: unknown key":                  base + "header = \"x\"\n",
		"sequences[0].steps.s.retry_override.delay: unknown key":    base + "retry_override = { delay = 5 }\n",
		"sequences[1].schedule.time.second: unknown key":            base + "[[sequences]]\nname = \"c\"\n[sequences.schedule]\ntime = { minute = 1, second = 2 }\n",
		"sequences[0].start: unknown key":                           "project = \"p\"\n[[sequences]]\nname = \"a\"\nstart = 2030-01-01T00:00:00Z\n",
		"sequences[1].overlap: \"never\" is not one of allow, skip": base + "[[sequences]]\nname = \"b\"\noverlap = \"never\"\n[sequences.schedule]\nevery = \"1h\"\n[sequences.steps.s]\npath = \"/s\"\n",
	}
	for want, text := range cases {
		_, err := parseManifest(text)
		require.ErrorContains(t, err, want, text)
	}
	// Data is free-form.
	_, err := parseManifest(base + "data = { anything = { goes = [1, 2] } }\n")
	require.NoError(t, err)
}

func TestManifestChecksItsStructure(t *testing.T) {
	t.Parallel()
	_, err := parseManifest(`
[[sequences]]
name = "a"
start_at = 2030-01-01T09:00:00
[sequences.schedule]
every = "1h"
frequency = "daily"
[sequences.steps.s]
depends_on = ["nope"]
data = 3
[[sequences]]
name = "a"
[sequences.schedule]
frequency = "yearly"
`)
	require.Error(t, err)
	for _, want := range []string{
		"project: is required",
		"sequences[0].start_at: needs an offset",
		"sequences[0].schedule: every, or a calendar",
		"sequences[0].steps.s.path: is required",
		`sequences[0].steps.s.depends_on: "nope" is not a step of this sequence`,
		"sequences[0].steps.s.data: is a int64",
		`sequences[1].name: "a" is the name of sequences[0] too`,
		`sequences[1].schedule.frequency: "yearly" is not one of`,
		"sequences[1].steps: give at least one",
	} {
		require.ErrorContains(t, err, want)
	}
}

func TestTOMLValues(t *testing.T) {
	t.Parallel()
	for want, v := range map[string]any{
		`"a\"b\\c\u007f"`:                "a\"b\\c\x7f",
		`"<&>"`:                          "<&>",
		"3":                              3.0,
		"0.25":                           0.25,
		"1e+300":                         1e300,
		`{ "a b" = 1, c = [true, "x"] }`: map[string]any{"a b": 1, "c": []any{true, "x"}},
		"{}":                             map[string]any{},
		"2030-01-02T03:04:05Z":           time.Date(2030, 1, 2, 4, 4, 5, 0, time.FixedZone("", 3600)),
	} {
		require.Equal(t, want, tomlValue(v))
	}
}

// TestManifestFailurePolicy: [failure_policy] names the classes whose
// action it sets; a class left out keeps its live action, pull writes the
// classes that are not retried, and a change patches the file's classes.
func TestManifestFailurePolicy(t *testing.T) {
	t.Parallel()
	m, err := parseManifest(`project = "p"

[failure_policy]
"410" = "pause"
4xx = "fail"
`)
	require.NoError(t, err)
	live := sundial.Project{ID: "p", FailurePolicy: map[string]string{"410": "retry", "4xx": "fail", "5xx": "fail"}}
	p := buildPlan(m, live, nil)
	require.Len(t, p.Changes, 1)
	require.Equal(t, []fieldChange{{Field: "failure_policy.410", Live: `"retry"`, File: `"pause"`}}, p.Changes[0].Fields,
		"5xx is left out: it keeps its action")
	require.Equal(t, map[string]string{"410": "pause", "4xx": "fail"}, p.Changes[0].patch.FailurePolicy)

	live.FailurePolicy["410"] = "pause"
	require.Empty(t, buildPlan(m, live, nil).Changes)
	text := string(liveManifest(live, nil).encode(""))
	require.Contains(t, text, "\n[failure_policy]\n\"410\" = \"pause\"\n\"4xx\" = \"fail\"\n\"5xx\" = \"fail\"\n")
	pulled, err := parseManifest(text)
	require.NoError(t, err, text)
	require.Empty(t, buildPlan(pulled, live, nil).Changes)
}

// TestManifestOrderingOnFailure: ordering_on_failure sets the project's
// orderingOnFailure; left out it is left as it is, pull writes it when it
// is not the default, and a word other than continue or hold is refused
// offline, naming the key.
func TestManifestOrderingOnFailure(t *testing.T) {
	t.Parallel()
	m, err := parseManifest(`project = "p"
ordering_on_failure = "hold"
`)
	require.NoError(t, err)
	live := sundial.Project{ID: "p", OrderingOnFailure: sundial.OrderingContinue}
	p := buildPlan(m, live, nil)
	require.Len(t, p.Changes, 1)
	require.Equal(t, []fieldChange{{Field: "ordering_on_failure", Live: `"continue"`, File: `"hold"`}}, p.Changes[0].Fields)
	require.Equal(t, sundial.OrderingHold, *p.Changes[0].patch.OrderingOnFailure)
	require.Nil(t, p.Changes[0].patch.RetryPolicy, "nothing else changes")

	left, err := parseManifest(`project = "p"`)
	require.NoError(t, err)
	require.Empty(t, buildPlan(left, live, nil).Changes, "left out: left as it is")
	require.NotContains(t, string(liveManifest(live, nil).encode("")), "ordering_on_failure", "the default is not written")

	live.OrderingOnFailure = sundial.OrderingHold
	require.Empty(t, buildPlan(m, live, nil).Changes)
	text := string(liveManifest(live, nil).encode(""))
	require.Contains(t, text, "\nordering_on_failure = \"hold\"\n")
	pulled, err := parseManifest(text)
	require.NoError(t, err, text)
	require.Empty(t, buildPlan(pulled, live, nil).Changes)

	_, err = parseManifest(`project = "p"
ordering_on_failure = "pause"
`)
	require.ErrorContains(t, err, `ordering_on_failure: "pause" is not one of continue, hold`)
}

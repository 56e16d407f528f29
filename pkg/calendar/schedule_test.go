package calendar_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
)

// requireProblems checks that err is an *InvalidError listing exactly the
// given problems, in order, each written "field: start of the message".
func requireProblems(t *testing.T, err error, want ...string) {
	t.Helper()
	var invalid *calendar.InvalidError
	require.True(t, errors.As(err, &invalid), "want an *InvalidError, got %v", err)
	got := make([]string, len(invalid.Problems))
	for i, p := range invalid.Problems {
		got[i] = p.String()
	}
	require.Len(t, got, len(want), "%q", got)
	for i := range want {
		require.True(t, strings.HasPrefix(got[i], want[i]), "problem %d: want %q, got %q", i, want[i], got[i])
	}
}

func TestParseAcceptsValidSchedules(t *testing.T) {
	t.Parallel()
	valid := []string{
		`{"every":"1m"}`,
		`{"every":"365d"}`,
		`{"every":"1d12h"}`,
		`{"frequency":"hourly","timezone":"UTC","time":{"minute":0}}`,
		`{"frequency":"hourly","timezone":"Asia/Kathmandu","time":{"minute":59}}`,
		`{"frequency":"daily","timezone":"America/New_York","time":{"hour":0,"minute":0}}`,
		`{"frequency":"daily","timezone":"Australia/Lord_Howe","time":{"hour":23,"minute":59}}`,
		`{"frequency":"weekly","timezone":"Europe/London","time":{"hour":9,"minute":0},"daysOfWeek":["mon","tue","wed","thu","fri","sat","sun"]}`,
		`{"frequency":"monthly","timezone":"America/Santiago","time":{"hour":2,"minute":30},"daysOfMonth":[1,15,31,-1]}`,
		" {\n\t\"every\" : \"2h\" } \n",
	}
	for _, v := range valid {
		s, err := calendar.Parse([]byte(v))
		require.NoError(t, err, v)
		require.True(t, s.Every() > 0 || s.Location() != nil, v)
	}
}

func TestParseReportsEachProblemByField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       []string
	}{
		{"empty object", `{}`, []string{"schedule: must have either every or frequency"}},
		{"every too short", `{"every":"59s"}`, []string{"schedule.every: must be at least 1m"}},
		{"every malformed", `{"every":"1h30"}`, []string{"schedule.every: must be a duration"}},
		{"every empty", `{"every":""}`, []string{"schedule.every: must be a duration"}},
		{"every too long", `{"every":"366d"}`, []string{"schedule.every: must be at most 365d"}},
		{"every with calendar fields", `{"every":"1h","frequency":"daily","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfWeek":["mon"],"daysOfMonth":[1]}`,
			[]string{"schedule.frequency: is not used with every", "schedule.timezone: is not used with every",
				"schedule.time: is not used with every", "schedule.daysOfWeek: is not used with every", "schedule.daysOfMonth: is not used with every"}},
		{"unknown frequency", `{"frequency":"yearly","timezone":"UTC","time":{"hour":1,"minute":0}}`,
			[]string{`schedule.frequency: must be one of "hourly", "daily", "weekly", "monthly"`}},
		{"frequency in capitals", `{"frequency":"Daily","timezone":"UTC","time":{"hour":1,"minute":0}}`,
			[]string{"schedule.frequency: must be one of"}},
		{"no timezone", `{"frequency":"daily","time":{"hour":1,"minute":0}}`, []string{"schedule.timezone: is required with frequency"}},
		{"unknown timezone", `{"frequency":"daily","timezone":"Mars/Olympus","time":{"hour":1,"minute":0}}`,
			[]string{"schedule.timezone: is not a known IANA time zone name"}},
		{"Local timezone", `{"frequency":"daily","timezone":"Local","time":{"hour":1,"minute":0}}`,
			[]string{"schedule.timezone: must be an IANA time zone name"}},
		{"no time", `{"frequency":"daily","timezone":"UTC"}`, []string{"schedule.time: is required"}},
		{"no time, hourly", `{"frequency":"hourly","timezone":"UTC"}`, []string{`schedule.time: is required: {"minute"`}},
		{"hour with hourly", `{"frequency":"hourly","timezone":"UTC","time":{"hour":1,"minute":0}}`,
			[]string{"schedule.time.hour: is not used with hourly"}},
		{"no hour with daily", `{"frequency":"daily","timezone":"UTC","time":{"minute":0}}`, []string{"schedule.time.hour: is required with daily"}},
		{"no minute", `{"frequency":"daily","timezone":"UTC","time":{"hour":1}}`, []string{"schedule.time.minute: is required"}},
		{"hour out of range", `{"frequency":"daily","timezone":"UTC","time":{"hour":24,"minute":0}}`, []string{"schedule.time.hour: must be 0-23"}},
		{"negative hour", `{"frequency":"daily","timezone":"UTC","time":{"hour":-1,"minute":0}}`, []string{"schedule.time.hour: must be 0-23"}},
		{"minute out of range", `{"frequency":"hourly","timezone":"UTC","time":{"minute":60}}`, []string{"schedule.time.minute: must be 0-59"}},
		{"daysOfWeek with daily", `{"frequency":"daily","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfWeek":["mon"]}`,
			[]string{"schedule.daysOfWeek: is only used with weekly"}},
		{"daysOfMonth with weekly", `{"frequency":"weekly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfWeek":["mon"],"daysOfMonth":[1]}`,
			[]string{"schedule.daysOfMonth: is only used with monthly"}},
		{"weekly without days", `{"frequency":"weekly","timezone":"UTC","time":{"hour":1,"minute":0}}`,
			[]string{"schedule.daysOfWeek: is required with weekly"}},
		{"weekly with no days", `{"frequency":"weekly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfWeek":[]}`,
			[]string{"schedule.daysOfWeek: must list at least one day"}},
		{"unknown day", `{"frequency":"weekly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfWeek":["mon","tue","fri "]}`,
			[]string{`schedule.daysOfWeek[2]: unknown day "fri "`}},
		{"day in capitals", `{"frequency":"weekly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfWeek":["Mon"]}`,
			[]string{`schedule.daysOfWeek[0]: unknown day "Mon"`}},
		{"repeated day", `{"frequency":"weekly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfWeek":["mon","fri","mon"]}`,
			[]string{`schedule.daysOfWeek[2]: "mon" is listed twice`}},
		{"monthly without days", `{"frequency":"monthly","timezone":"UTC","time":{"hour":1,"minute":0}}`,
			[]string{"schedule.daysOfMonth: is required with monthly"}},
		{"monthly with no days", `{"frequency":"monthly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfMonth":[]}`,
			[]string{"schedule.daysOfMonth: must list at least one day"}},
		{"day 0", `{"frequency":"monthly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfMonth":[1,0]}`,
			[]string{"schedule.daysOfMonth[1]: must be 1-31, or -1"}},
		{"day 32", `{"frequency":"monthly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfMonth":[32]}`,
			[]string{"schedule.daysOfMonth[0]: must be 1-31, or -1"}},
		{"day -2", `{"frequency":"monthly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfMonth":[-2]}`,
			[]string{"schedule.daysOfMonth[0]: must be 1-31, or -1"}},
		{"repeated month day", `{"frequency":"monthly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfMonth":[-1,15,-1]}`,
			[]string{"schedule.daysOfMonth[2]: -1 is listed twice"}},
		{"several at once", `{"frequency":"weekly","timezone":"Nowhere","time":{"hour":99,"minute":-5},"daysOfWeek":["someday"]}`,
			[]string{"schedule.timezone: is not a known", "schedule.time.hour: must be 0-23", "schedule.time.minute: must be 0-59",
				`schedule.daysOfWeek[0]: unknown day "someday"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := calendar.Parse([]byte(tc.body))
			requireProblems(t, err, tc.want...)
		})
	}
}

// TestParseIsStrict covers what encoding/json lets through on its own.
func TestParseIsStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		{"unknown field", `{"every":"1h","colour":"red"}`, "schedule.colour: unknown field"},
		{"unknown field in time", `{"frequency":"hourly","timezone":"UTC","time":{"minute":1,"second":0}}`, "schedule.time.second: unknown field"},
		{"wrong case", `{"Every":"1h"}`, `schedule.Every: unknown field (field names are case-sensitive: did you mean "every"?)`},
		{"wrong case in time", `{"frequency":"hourly","timezone":"UTC","time":{"Minute":1}}`, `schedule.time.Minute: unknown field (field names are case-sensitive`},
		{"duplicated field", `{"every":"1h","every":"2h"}`, "schedule.every: is given twice"},
		{"duplicated field in time", `{"frequency":"hourly","timezone":"UTC","time":{"minute":1,"minute":2}}`, "schedule.time.minute: is given twice"},
		{"trailing data", `{"every":"1h"} {}`, "schedule: has data after the JSON object"},
		{"trailing garbage", `{"every":"1h"}x`, "schedule: has data after the JSON object"},
		{"invalid UTF-8", "{\"every\":\"1h\xff\"}", "schedule: is not valid UTF-8"},
		{"not an object", `["every"]`, "schedule: must be a JSON object"},
		{"null", `null`, "schedule: must be a JSON object"},
		{"empty", ``, "schedule: is not valid JSON"},
		{"truncated", `{"every":"1h"`, "schedule: is not valid JSON"},
		{"hour as a string", `{"frequency":"daily","timezone":"UTC","time":{"hour":"9","minute":0}}`, "schedule.time.hour: must be an integer"},
		{"hour with a fraction", `{"frequency":"daily","timezone":"UTC","time":{"hour":9.5,"minute":0}}`, "schedule.time.hour: must be an integer"},
		{"huge minute", `{"frequency":"hourly","timezone":"UTC","time":{"minute":1e400}}`, "schedule.time.minute: must be an integer"},
		{"time as a string", `{"frequency":"daily","timezone":"UTC","time":"09:00"}`, "schedule.time: must be an object"},
		{"every as a number", `{"every":60}`, "schedule.every: must be a string"},
		{"days as a string", `{"frequency":"weekly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfWeek":"mon"}`, "schedule.daysOfWeek: must be a list of day names"},
		{"day as a number", `{"frequency":"weekly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfWeek":[1]}`, "schedule.daysOfWeek: must be a list of day names"},
		{"month day as a string", `{"frequency":"monthly","timezone":"UTC","time":{"hour":1,"minute":0},"daysOfMonth":["1"]}`, "schedule.daysOfMonth: must be a list of days of the month"},
		{"deep nesting", `{"daysOfWeek":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, "schedule.daysOfWeek[0][0][0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := calendar.Parse([]byte(tc.body))
			requireProblems(t, err, tc.want)
		})
	}
}

// TestSpecRoundTrips checks that a schedule written back as JSON (a
// sequence's GET) is the schedule that was sent, and parses again.
func TestSpecRoundTrips(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"every":"1d12h"}`,
		`{"frequency":"hourly","timezone":"UTC","time":{"minute":0}}`,
		`{"frequency":"weekly","timezone":"Europe/London","time":{"hour":0,"minute":0},"daysOfWeek":["fri","mon"]}`,
		`{"frequency":"monthly","timezone":"America/Santiago","time":{"hour":2,"minute":30},"daysOfMonth":[-1,1]}`,
	} {
		s, err := calendar.Parse([]byte(body))
		require.NoError(t, err)
		out, err := json.Marshal(s.Spec())
		require.NoError(t, err)
		require.JSONEq(t, body, string(out))
		_, err = calendar.Parse(out)
		require.NoError(t, err)
	}
}

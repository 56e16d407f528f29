package hook_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// oneMiB is the default largest data payload.
const oneMiB = 1 << 20

// validate decodes body as the API does (strictly) and validates it with
// the default data limit.
func validate(t *testing.T, body string) (hook.New, error) {
	t.Helper()
	var req hook.CreateRequest
	require.NoError(t, strictjson.Decode([]byte(body), &req), body)
	return req.Validate(oneMiB)
}

// fieldsAtFault returns the fields an *InvalidError names, each with a
// message.
func fieldsAtFault(t *testing.T, err error) []string {
	t.Helper()
	var invalid *hook.InvalidError
	require.True(t, errors.As(err, &invalid), "want an *InvalidError, got %v", err)
	var fields []string
	for _, p := range invalid.Problems {
		require.NotEmpty(t, p.Message, p.Field)
		fields = append(fields, p.Field)
	}
	return fields
}

// validationCase is a request body and the fields it must be refused for,
// none when it must be accepted.
type validationCase struct {
	name   string
	body   string
	fields []string
}

func runValidationCases(t *testing.T, cases []validationCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := validate(t, tc.body)
			if len(tc.fields) == 0 {
				require.NoError(t, err, tc.body)
				return
			}
			require.ElementsMatch(t, tc.fields, fieldsAtFault(t, err), tc.body)
		})
	}
}

// withPostIn is a valid body scheduled with postIn.
func withPostIn(postIn string) string {
	return `{"path":"/a","data":{},"postIn":` + quote(postIn) + `}`
}

func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestValidatePostIn(t *testing.T) {
	t.Parallel()
	accepted := map[string]time.Duration{
		"1s":             time.Second,
		"59s":            59 * time.Second,
		"365d":           365 * 24 * time.Hour,
		"8760h":          365 * 24 * time.Hour,
		"525600m":        365 * 24 * time.Hour,
		"31536000s":      365 * 24 * time.Hour,
		"364d24h":        365 * 24 * time.Hour,
		"364d23h59m60s":  365 * 24 * time.Hour,
		"365d0h0m0s":     365 * 24 * time.Hour,
		"0d0h0m1s":       time.Second,
		"1d1h1m1s":       25*time.Hour + time.Minute + time.Second,
		"0000000000001s": time.Second,
		"90m":            90 * time.Minute,
	}
	for in, want := range accepted {
		t.Run("accepts "+in, func(t *testing.T) {
			t.Parallel()
			n, err := validate(t, withPostIn(in))
			require.NoError(t, err)
			require.Equal(t, want, n.PostIn)
			require.Nil(t, n.PostAt, "postIn is measured from the database clock")
		})
	}
	refused := []string{
		"", "0s", "0d", "0d0h0m0s", "365d1s", "8760h1s", "525601m", "31536001s", "366d",
		"99999999999999999999s", "1d1d", "1h1h", "1h1d", "1s1m", "1m1h", "1s1d",
		"1D", "1S", "1 s", " 1s", "1s ", "1s\n", "1.5s", "1,5s", "-1s", "+1s", "1", "d", "s", "1w", "1ms",
		"1y", "1d 1h", "1d-1h", "１s", "٣s", "1s1", "0x10s", "1e3s",
	}
	for _, in := range refused {
		t.Run("refuses "+quote(in), func(t *testing.T) {
			t.Parallel()
			_, err := validate(t, withPostIn(in))
			require.Equal(t, []string{"postIn"}, fieldsAtFault(t, err))
		})
	}
}

func TestValidatePath(t *testing.T) {
	t.Parallel()
	ascii := func(n int) string { return "/" + strings.Repeat("a", n-1) } // n bytes
	// "é" is two bytes: the limit counts bytes, not characters.
	accents := func(n int) string { return "/" + strings.Repeat("é", (n-1)/2) + strings.Repeat("a", (n-1)%2) }
	require.Len(t, ascii(2048), 2048)
	require.Len(t, accents(2049), 2049)
	accepted := []string{
		"/", "/a", "/a/b/c", "/a/b?x=1&y=2", "/a?next=/b/../c", "/a?", "/a?x=%20",
		"/a..b", "/...", "/a/..b/c", "/a/b../c", "/./a", "/%2e", "/café", "/caf%C3%A9", "/a/%2F/b",
		"/https://evil.example", "/@evil.example", "/a:b", "/a;b=c", "/~user", "/a%2Fb",
		ascii(2048), accents(2048), "/a?" + strings.Repeat("q", 2045),
	}
	for _, path := range accepted {
		t.Run("accepts "+short(path), func(t *testing.T) {
			t.Parallel()
			n, err := validatePath(path)
			require.NoError(t, err)
			require.Equal(t, path, n.Path)
		})
	}
	refused := []string{
		"", "a", "a/b", "?x=1", "https://evil.example/x", "http://evil.example", "https:/x",
		"//evil.example/x", "///x", `\\evil.example\x`, "mailto:x@example.com",
		"/..", "/../a", "/a/..", "/a/../b", "/a/..?x=1", "/a/%2e%2e/b", "/a/%2E%2e", "/a/.%2E/b",
		"/a/..%2Fb", "/a/%2e%2e%2fb", "/a/..%5Cb", `/a/..\b`, `/a\..\b`,
		"/a b", "/a\tb", "/a\nb", "/a\rb", "/a\u0000", "/a\u0007", "/a\u007f", "/a\u0085", "/a\u00a0b",
		"/a\u2028b", "/a\u3000b", " /a", "/a ",
		"/a#b", "/a?x#y", "/a%zz", "/a%", "/a%2",
		ascii(2049), accents(2049), "/a?" + strings.Repeat("q", 2046),
	}
	for _, path := range refused {
		t.Run("refuses "+short(path), func(t *testing.T) {
			t.Parallel()
			_, err := validatePath(path)
			require.Equal(t, []string{"path"}, fieldsAtFault(t, err))
		})
	}
	t.Run("refuses a missing path", func(t *testing.T) {
		t.Parallel()
		_, err := validate(t, `{"data":{},"postIn":"1m"}`)
		require.Equal(t, []string{"path"}, fieldsAtFault(t, err))
	})
}

// validatePath validates a request with path and otherwise valid fields,
// built directly: a NUL, for one, never gets past the strict decoder, but
// the path rule must refuse it on its own too.
func validatePath(path string) (hook.New, error) {
	postIn := "1m"
	return hook.CreateRequest{Path: &path, Data: json.RawMessage(`{}`), PostIn: &postIn}.Validate(oneMiB)
}

// short names a subtest after a long value without making its name huge.
func short(s string) string {
	if len(s) > 40 {
		return quote(s[:20]) + "..." + quote(s[len(s)-10:])
	}
	return quote(s)
}

func TestValidateData(t *testing.T) {
	t.Parallel()
	runValidationCases(t, []validationCase{
		{"an empty object", `{"path":"/a","data":{},"postIn":"1m"}`, nil},
		{"a nested object", `{"path":"/a","data":{"a":[1,{"b":null}],"c":"é"},"postIn":"1m"}`, nil},
		{"missing", `{"path":"/a","postIn":"1m"}`, []string{"data"}},
		{"null", `{"path":"/a","data":null,"postIn":"1m"}`, []string{"data"}},
		{"an empty array", `{"path":"/a","data":[],"postIn":"1m"}`, []string{"data"}},
		{"an array of objects", `{"path":"/a","data":[{}],"postIn":"1m"}`, []string{"data"}},
		{"a string", `{"path":"/a","data":"{}","postIn":"1m"}`, []string{"data"}},
		{"a number", `{"path":"/a","data":1,"postIn":"1m"}`, []string{"data"}},
		{"a boolean", `{"path":"/a","data":true,"postIn":"1m"}`, []string{"data"}},
	})
}

// dataOf is a data object of exactly n bytes as stored and sent: one byte
// more than compacted, the space jsonb puts after its colon.
func dataOf(n int) string {
	return `{"s":"` + strings.Repeat("x", n-9) + `"}`
}

func TestValidateDataSize(t *testing.T) {
	t.Parallel()
	body := func(data string) string { return `{"path":"/a","postIn":"1m","data":` + data + `}` }
	require.Len(t, dataOf(oneMiB), oneMiB-1)

	n, err := validate(t, body(dataOf(oneMiB)))
	require.NoError(t, err, "exactly 1 MiB as stored is accepted")
	require.Len(t, n.Data, oneMiB-1, "stored compacted")

	_, err = validate(t, body(dataOf(oneMiB+1)))
	var tooLarge *hook.TooLargeError
	require.True(t, errors.As(err, &tooLarge), "1 MiB + 1 byte is too large (413), got %v", err)
	require.Equal(t, oneMiB+1, tooLarge.Size)
	require.Equal(t, oneMiB, tooLarge.Max)

	// The limit applies to the payload, not the client's whitespace: the
	// data is stored compacted.
	spaced := `{"s" : "` + strings.Repeat("x", oneMiB-9) + `"` + strings.Repeat(" ", 4096) + "\n}"
	n, err = validate(t, body(spaced))
	require.NoError(t, err, "indentation does not count")
	require.Len(t, n.Data, oneMiB-1)

	// But it counts what PostgreSQL's jsonb gives back, which is what is
	// published and sent: a space after every comma, numbers written out.
	commas := `{"a":[0` + strings.Repeat(",0", (oneMiB-10)/2) + `]}`
	require.Less(t, len(commas), oneMiB)
	_, err = validate(t, body(commas))
	require.True(t, errors.As(err, &tooLarge), "got %v", err)
	require.Greater(t, tooLarge.Size, oneMiB*3/2-64)
	huge := `{"x":[1e131071` + strings.Repeat(",1e131071", 8) + `]}`
	_, err = validate(t, body(huge))
	require.True(t, errors.As(err, &tooLarge), "%d bytes written out in 9 x 131,072 digits, got %v", len(huge), err)

	// A payload too large is reported before, and instead of, other
	// problems: the client must shrink it first.
	_, err = validate(t, `{"path":"x","postIn":"0s","data":`+dataOf(oneMiB+1)+`}`)
	require.True(t, errors.As(err, &tooLarge), "got %v", err)
}

// retryBody is a valid body with the given retryOverride JSON.
func retryBody(override string) string {
	return `{"path":"/a","data":{},"postIn":"1m","retryOverride":` + override + `}`
}

func TestValidateRetryOverrideBounds(t *testing.T) {
	t.Parallel()
	const (
		minR = "retryOverride.minRetries"
		dly  = "retryOverride.delaySecs"
		str  = "retryOverride.strategy"
		bf   = "retryOverride.backoffFactor"
		maxD = "retryOverride.maxDelaySecs"
	)
	with := func(fields string) string {
		return retryBody(`{"minRetries":3,"delaySecs":10,"strategy":"exponential"` + fields + `}`)
	}
	runValidationCases(t, []validationCase{
		{"null is no override", retryBody(`null`), nil},
		{"minRetries 1", retryBody(`{"minRetries":1,"delaySecs":10,"strategy":"fixed"}`), nil},
		{"minRetries 15", retryBody(`{"minRetries":15,"delaySecs":10,"strategy":"fixed"}`), nil},
		{"minRetries 0", retryBody(`{"minRetries":0,"delaySecs":10,"strategy":"fixed"}`), []string{minR}},
		{"minRetries 16", retryBody(`{"minRetries":16,"delaySecs":10,"strategy":"fixed"}`), []string{minR}},
		{"minRetries -1", retryBody(`{"minRetries":-1,"delaySecs":10,"strategy":"fixed"}`), []string{minR}},
		{"minRetries null", retryBody(`{"minRetries":null,"delaySecs":10,"strategy":"fixed"}`), []string{minR}},
		{"minRetries missing", retryBody(`{"delaySecs":10,"strategy":"fixed"}`), []string{minR}},
		{"delaySecs 5", retryBody(`{"minRetries":3,"delaySecs":5,"strategy":"fixed"}`), nil},
		{"delaySecs 60", retryBody(`{"minRetries":3,"delaySecs":60,"strategy":"fixed"}`), nil},
		{"delaySecs 4", retryBody(`{"minRetries":3,"delaySecs":4,"strategy":"fixed"}`), []string{dly}},
		{"delaySecs 61", retryBody(`{"minRetries":3,"delaySecs":61,"strategy":"fixed"}`), []string{dly}},
		{"delaySecs 0", retryBody(`{"minRetries":3,"delaySecs":0,"strategy":"fixed"}`), []string{dly}},
		{"delaySecs missing", retryBody(`{"minRetries":3,"strategy":"fixed"}`), []string{dly}},
		{"strategy fixed", retryBody(`{"minRetries":3,"delaySecs":10,"strategy":"fixed"}`), nil},
		{"strategy exponential", with(``), nil},
		{"strategy Fixed", retryBody(`{"minRetries":3,"delaySecs":10,"strategy":"Fixed"}`), []string{str}},
		{"strategy FIXED", retryBody(`{"minRetries":3,"delaySecs":10,"strategy":"FIXED"}`), []string{str}},
		{"strategy Exponential", retryBody(`{"minRetries":3,"delaySecs":10,"strategy":"Exponential"}`), []string{str}},
		{"strategy with a space", retryBody(`{"minRetries":3,"delaySecs":10,"strategy":"fixed "}`), []string{str}},
		{"strategy empty", retryBody(`{"minRetries":3,"delaySecs":10,"strategy":""}`), []string{str}},
		{"strategy linear", retryBody(`{"minRetries":3,"delaySecs":10,"strategy":"linear"}`), []string{str}},
		{"strategy missing", retryBody(`{"minRetries":3,"delaySecs":10}`), []string{str}},
		{"backoffFactor 1.1", with(`,"backoffFactor":1.1`), nil},
		{"backoffFactor 4.0", with(`,"backoffFactor":4.0`), nil},
		{"backoffFactor 4", with(`,"backoffFactor":4`), nil},
		{"backoffFactor 1.09", with(`,"backoffFactor":1.09`), []string{bf}},
		{"backoffFactor 1.0999999", with(`,"backoffFactor":1.0999999`), []string{bf}},
		{"backoffFactor 4.0000001", with(`,"backoffFactor":4.0000001`), []string{bf}},
		{"backoffFactor 0", with(`,"backoffFactor":0`), []string{bf}},
		{"backoffFactor -2", with(`,"backoffFactor":-2`), []string{bf}},
		{"maxDelaySecs 60", with(`,"maxDelaySecs":60`), nil},
		{"maxDelaySecs 3600", with(`,"maxDelaySecs":3600`), nil},
		{"maxDelaySecs 59", with(`,"maxDelaySecs":59`), []string{maxD}},
		{"maxDelaySecs 3601", with(`,"maxDelaySecs":3601`), []string{maxD}},
		{"jitter true", with(`,"jitter":true`), nil},
		{"every field at its lower edge", retryBody(`{"minRetries":1,"delaySecs":5,"strategy":"exponential","backoffFactor":1.1,"maxDelaySecs":60,"jitter":false}`), nil},
		{"every field at its upper edge", retryBody(`{"minRetries":15,"delaySecs":60,"strategy":"exponential","backoffFactor":4.0,"maxDelaySecs":3600,"jitter":true}`), nil},
		{"every field just past its lower edge", retryBody(`{"minRetries":0,"delaySecs":4,"strategy":"exponential","backoffFactor":1.09,"maxDelaySecs":59}`), []string{minR, dly, bf, maxD}},
		{"every field just past its upper edge", retryBody(`{"minRetries":16,"delaySecs":61,"strategy":"exponential","backoffFactor":4.01,"maxDelaySecs":3601}`), []string{minR, dly, bf, maxD}},
		{"empty object", retryBody(`{}`), []string{minR, dly, str}},
	})
}

func TestValidateRetryOverrideDefaults(t *testing.T) {
	t.Parallel()
	n, err := validate(t, retryBody(`{"minRetries":1,"delaySecs":5,"strategy":"fixed"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"minRetries":1,"delaySecs":5,"strategy":"fixed","backoffFactor":2.0,"jitter":false}`, string(n.RetryOverride),
		"backoffFactor defaults to 2.0, jitter to off, and a missing maxDelaySecs stays missing")

	n, err = validate(t, retryBody(`null`))
	require.NoError(t, err)
	require.Nil(t, n.RetryOverride, "no override: the project's defaults apply")
}

func TestValidateScheduleModes(t *testing.T) {
	t.Parallel()
	const (
		at    = `"postAt":"2030-01-01T00:00:00Z"`
		local = `"postAtLocal":"2030-01-01T09:00:00"`
		tz    = `"timezone":"Europe/Paris"`
		in    = `"postIn":"1m"`
	)
	body := func(fields ...string) string {
		return `{"path":"/a","data":{}` + prefixed(fields) + `}`
	}
	runValidationCases(t, []validationCase{
		{"postAt", body(at), nil},
		{"postAtLocal with timezone", body(local, tz), nil},
		{"postIn", body(in), nil},
		{"none", body(), []string{"postAt"}},
		{"timezone alone", body(tz), []string{"postAt", "timezone"}},
		{"postAtLocal without timezone", body(local), []string{"timezone"}},
		{"postAt with timezone", body(at, tz), []string{"timezone"}},
		{"postIn with timezone", body(in, tz), []string{"timezone"}},
		{"postAt and postIn", body(at, in), []string{"postAt", "postIn"}},
		{"postAt and postAtLocal", body(at, local, tz), []string{"postAt", "postAtLocal"}},
		{"postAt and postAtLocal without timezone", body(at, local), []string{"postAt", "postAtLocal", "timezone"}},
		{"postAtLocal and postIn", body(local, tz, in), []string{"postAtLocal", "postIn"}},
		{"all three", body(at, local, tz, in), []string{"postAt", "postAtLocal", "postIn"}},
		{"postAt, postIn and timezone", body(at, in, tz), []string{"postAt", "postIn", "timezone"}},
		{"postAt null counts as absent", body(`"postAt":null`, in), nil},
		{"timezone null counts as absent", body(in, `"timezone":null`), nil},
	})
}

func prefixed(fields []string) string {
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(",")
		b.WriteString(f)
	}
	return b.String()
}

func TestValidatePostAt(t *testing.T) {
	t.Parallel()
	accepted := map[string]string{
		"2030-01-01T00:00:00Z":             "2030-01-01T00:00:00Z",
		"2030-06-01T12:00:00.5+02:00":      "2030-06-01T10:00:00.5Z",
		"2030-06-01T12:00:00-09:30":        "2030-06-01T21:30:00Z",
		"2001-02-03T04:05:06Z":             "2001-02-03T04:05:06Z", // past: due at once
		"0001-01-01T00:00:00Z":             "0001-01-01T00:00:00Z",
		"9999-12-31T23:59:59Z":             "9999-12-31T23:59:59Z",
		"9999-12-31T23:59:59+01:00":        "9999-12-31T22:59:59Z",
		"2030-01-01T00:00:00.123456789Z":   "2030-01-01T00:00:00.123456789Z",
		"2030-01-01T00:00:00.000000+00:00": "2030-01-01T00:00:00Z",
	}
	for in, want := range accepted {
		t.Run("accepts "+in, func(t *testing.T) {
			t.Parallel()
			n, err := validate(t, `{"path":"/a","data":{},"postAt":`+quote(in)+`}`)
			require.NoError(t, err)
			require.Equal(t, want, n.PostAt.Format(time.RFC3339Nano))
			require.Equal(t, time.UTC, n.PostAt.Location())
		})
	}
	refused := []string{
		"", "tomorrow", "2030-01-01", "2030-01-01T00:00:00", "2030-01-01 00:00:00Z", "2030-01-01T00:00Z",
		"2030-02-30T00:00:00Z", "2030-01-01T24:00:00Z", "2030-01-01T00:00:00+25:00", "1767225600",
		"9999-12-31T23:59:59-00:01", "0001-01-01T00:00:00+00:01", "0000-06-01T00:00:00Z",
	}
	for _, in := range refused {
		t.Run("refuses "+quote(in), func(t *testing.T) {
			t.Parallel()
			_, err := validate(t, `{"path":"/a","data":{},"postAt":`+quote(in)+`}`)
			require.Equal(t, []string{"postAt"}, fieldsAtFault(t, err))
		})
	}
}

func TestValidatePostAtLocal(t *testing.T) {
	t.Parallel()
	body := func(local, zone string) string {
		return `{"path":"/a","data":{},"postAtLocal":` + quote(local) + `,"timezone":` + quote(zone) + `}`
	}
	accepted := []struct{ local, zone, want string }{
		{"2030-01-01T09:00:00", "Europe/Paris", "2030-01-01T08:00:00Z"},
		{"2030-01-01T09:00:00", "UTC", "2030-01-01T09:00:00Z"},
		{"2030-01-01T09:00:00", "Etc/GMT+5", "2030-01-01T14:00:00Z"}, // POSIX sign: GMT+5 is UTC-5
		{"2030-01-01T09:00:00", "Asia/Kolkata", "2030-01-01T03:30:00Z"},
		{"2030-01-01T09:00:00", "America/St_Johns", "2030-01-01T12:30:00Z"},
		{"2030-03-10T02:30:00", "America/New_York", "2030-03-10T07:00:00Z"}, // a gap moves forward
		{"2001-01-01T00:00:00", "Europe/Paris", "2000-12-31T23:00:00Z"},     // past: due at once
		{"9999-12-31T23:59:59", "Pacific/Kiritimati", "9999-12-31T09:59:59Z"},
		{"0001-01-01T12:00:00", "UTC", "0001-01-01T12:00:00Z"},
	}
	for _, tc := range accepted {
		t.Run("accepts "+tc.local+" "+tc.zone, func(t *testing.T) {
			t.Parallel()
			n, err := validate(t, body(tc.local, tc.zone))
			require.NoError(t, err)
			require.Equal(t, tc.want, n.PostAt.Format(time.RFC3339))
		})
	}
	refused := []struct {
		name, local, zone string
		fields            []string
	}{
		{"with Z", "2030-01-01T09:00:00Z", "UTC", []string{"postAtLocal"}},
		{"with an offset", "2030-01-01T09:00:00+01:00", "Europe/Paris", []string{"postAtLocal"}},
		{"with a fraction", "2030-01-01T09:00:00.5", "Europe/Paris", []string{"postAtLocal"}},
		{"without seconds", "2030-01-01T09:00", "Europe/Paris", []string{"postAtLocal"}},
		{"date only", "2030-01-01", "Europe/Paris", []string{"postAtLocal"}},
		{"with a space", "2030-01-01 09:00:00", "Europe/Paris", []string{"postAtLocal"}},
		{"lower-case t", "2030-01-01t09:00:00", "Europe/Paris", []string{"postAtLocal"}},
		{"single digits", "2030-1-1T9:00:00", "Europe/Paris", []string{"postAtLocal"}},
		{"basic format", "20300101T090000", "Europe/Paris", []string{"postAtLocal"}},
		{"non-ASCII digits", "２030-01-01T09:00:00", "Europe/Paris", []string{"postAtLocal"}},
		{"empty", "", "Europe/Paris", []string{"postAtLocal"}},
		{"month 13", "2030-13-01T09:00:00", "Europe/Paris", []string{"postAtLocal"}},
		{"30 February", "2030-02-30T09:00:00", "Europe/Paris", []string{"postAtLocal"}},
		{"29 February of a common year", "2030-02-29T09:00:00", "Europe/Paris", []string{"postAtLocal"}},
		{"hour 24", "2030-01-01T24:00:00", "Europe/Paris", []string{"postAtLocal"}},
		{"a leap second", "2030-12-31T23:59:60", "UTC", []string{"postAtLocal"}},
		{"after year 9999 in UTC", "9999-12-31T23:59:59", "Pacific/Pago_Pago", []string{"postAtLocal"}},
		{"before year 1 in UTC", "0001-01-01T00:00:00", "Asia/Tokyo", []string{"postAtLocal"}},
		{"unknown zone", "2030-01-01T09:00:00", "Mars/Olympus_Mons", []string{"timezone"}},
		{"empty zone", "2030-01-01T09:00:00", "", []string{"timezone"}},
		{"Local", "2030-01-01T09:00:00", "Local", []string{"timezone"}},
		{"an offset as a zone", "2030-01-01T09:00:00", "+01:00", []string{"timezone"}},
		{"a path as a zone", "2030-01-01T09:00:00", "/etc/localtime", []string{"timezone"}},
		{"climbing out of the zone files", "2030-01-01T09:00:00", "../../etc/passwd", []string{"timezone"}},
		{"zone with a trailing space", "2030-01-01T09:00:00", "Europe/Paris ", []string{"timezone"}},
		{"bad zone and bad time: both reported", "2030-01-01T09:00:00Z", "Mars/Olympus_Mons", []string{"postAtLocal", "timezone"}},
	}
	for _, tc := range refused {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := validate(t, body(tc.local, tc.zone))
			require.ElementsMatch(t, tc.fields, fieldsAtFault(t, err))
		})
	}
}

// TestValidateOrderingKey: an ordering key has a key's bounds (1 to 255
// printable ASCII characters), and a bad one is named orderingKey, with
// the other problems of the request.
func TestValidateOrderingKey(t *testing.T) {
	t.Parallel()
	n, err := validate(t, `{"path":"/a","data":{},"postIn":"1h","orderingKey":"account/42 ~"}`)
	require.NoError(t, err)
	require.Equal(t, "account/42 ~", n.OrderingKey)
	n, err = validate(t, `{"path":"/a","data":{},"postIn":"1h"}`)
	require.NoError(t, err)
	require.Empty(t, n.OrderingKey)
	runValidationCases(t, []validationCase{
		{"longest", `{"path":"/a","data":{},"postIn":"1h","orderingKey":"` + strings.Repeat("k", 255) + `"}`, nil},
		{"empty", `{"path":"/a","data":{},"postIn":"1h","orderingKey":""}`, []string{"orderingKey"}},
		{"too long", `{"path":"/a","data":{},"postIn":"1h","orderingKey":"` + strings.Repeat("k", 256) + `"}`, []string{"orderingKey"}},
		{"not ASCII", `{"path":"/a","data":{},"postIn":"1h","orderingKey":"caf\u00e9"}`, []string{"orderingKey"}},
		{"a control character", `{"path":"/a","data":{},"postIn":"1h","orderingKey":"a\nb"}`, []string{"orderingKey"}},
		{"with a bad key", `{"path":"/a","data":{},"postIn":"1h","key":"","orderingKey":""}`, []string{"key", "orderingKey"}},
	})
}

package delivery

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func keepAll(_, v string) string { return v }

// TestRecordBoundsTheBytes: lines that would take a side past
// MaxRecordedBytes are left out and counted, and smaller lines after them
// still fit.
func TestRecordBoundsTheBytes(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", MaxRecordedValueBytes) // 1 KiB each
	h := http.Header{"A-Small": {"1"}, "Z-Small": {"2"}}
	h["B-Big"] = []string{big, big, big, big, big, big, big, big, big, big}
	got := record(fieldsOf(nil, h), keepAll)

	// "A-Small" + "1" (8 bytes), then as many 1029-byte lines ("B-Big" and
	// its value) as fit in the rest, then "Z-Small" + "2".
	fit := (MaxRecordedBytes - 8 - 8) / (len("B-Big") + len(big))
	require.Len(t, got.GetFields(), 3)
	require.Equal(t, "A-Small", got.GetFields()[0].GetName())
	require.Equal(t, "B-Big", got.GetFields()[1].GetName())
	require.Len(t, got.GetFields()[1].GetValues(), fit)
	require.Equal(t, []string{"2"}, got.GetFields()[2].GetValues())
	require.EqualValues(t, 10-fit, got.GetOmitted())
}

// TestRecordCutsAndCleansValues: a value is cut at MaxRecordedValueBytes
// without splitting a character, and made valid UTF-8 without NUL bytes;
// a name's other values are kept in order.
func TestRecordCutsAndCleansValues(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", MaxRecordedValueBytes-1) + "é" // the é straddles the bound
	h := http.Header{"X": {"plain", long, "nul\x00byte", "bad\xffbyte", "last"}}
	got := record(fieldsOf(nil, h), keepAll)
	require.Equal(t, []string{"plain", strings.Repeat("a", MaxRecordedValueBytes-1) + RecordedCut,
		"nul\uFFFDbyte", "bad\uFFFDbyte", "last"}, got.GetFields()[0].GetValues())
	require.Zero(t, got.GetOmitted())
}

// TestRecordSharesUntouchedValues: a name's values that nothing changed
// are the header's own slice, not a copy; a changed one is copied, and the
// header is left as it was.
func TestRecordSharesUntouchedValues(t *testing.T) {
	t.Parallel()
	h := http.Header{"Keep": {"a", "b"}, "Secret": {"a", "s", "b"}}
	got := record(fieldsOf(nil, h), func(_, v string) string {
		if v == "s" {
			return Redacted
		}
		return v
	})
	require.Equal(t, []string{"a", "b"}, got.GetFields()[0].GetValues())
	require.Same(t, &h["Keep"][0], &got.GetFields()[0].GetValues()[0])
	require.Equal(t, []string{"a", Redacted, "b"}, got.GetFields()[1].GetValues())
	require.Equal(t, []string{"a", "s", "b"}, h["Secret"])
}

func TestRedactCookie(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"sid=abc":                         "sid=[redacted]",
		" sid = abc ; Path=/; Secure":     "sid=[redacted]; Path=/; Secure",
		"sid=a=b; Domain=example.com":     "sid=[redacted]; Domain=example.com",
		"no value at all":                 "[redacted]",
		"=anonymous; Max-Age=60":          "=[redacted]; Max-Age=60",
		"theme=dark; Expires=Wed, 21 Oct": "theme=[redacted]; Expires=Wed, 21 Oct",
	} {
		require.Equal(t, want, redactCookie(in), in)
	}
}

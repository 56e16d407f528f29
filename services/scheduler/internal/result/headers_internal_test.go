package result

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// The hand-written object means what encoding/json writes of the same
// headers merged by name, for names and values with every character JSON
// escapes, invalid UTF-8, NUL bytes, repeated names and fields without
// values.
func TestRecordedHeadersMeanWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(41, 46))
	pieces := []string{"a", "Z", "-", `"`, `\`, "\x00", "\x01", "\n", "\t", "\x1f", "\x7f", "é", "\u2028", "<", ">", "&", "\xff", "🙂", "/", "X-Twice"}
	text := func() string {
		var sb strings.Builder
		for range r.IntN(4) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		return sb.String()
	}
	for range 5000 {
		h := &eventv1.Headers{Omitted: int32(r.IntN(3))}
		want := map[string][]string{}
		for range r.IntN(6) {
			f := &eventv1.HeaderField{Name: text()}
			for range r.IntN(3) {
				f.Values = append(f.Values, text())
			}
			h.Fields = append(h.Fields, f)
			for _, v := range f.Values {
				want[cleanText(f.Name)] = append(want[cleanText(f.Name)], cleanText(v))
			}
		}
		rec := recordHeaders(h)
		wantJSON, err := json.Marshal(want)
		require.NoError(t, err)
		require.JSONEq(t, string(wantJSON), rec.text(), "%q", h.Fields)
		require.Equal(t, h.Omitted, rec.omitted)
	}
	require.Empty(t, recordHeaders(nil).text())
	require.Nil(t, recordHeaders(nil).raw())
}

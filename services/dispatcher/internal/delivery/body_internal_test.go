package delivery

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteStringIsEncodingJSONWithoutHTMLEscapes(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "0190b6a4-7f1e-7c3a-9f5e-2a1b3c4d5e6f", "2030-01-02T02:04:05.6Z", "/hooks/remind?user=7&kind=a",
		"<tag> & more", `quote " and \ backslash`, "tab\there\nnewline\r\x00\x1f\x7f", "é ü 日本",
		"\u2028\u2029", "bad \xff utf-8", "~ and space",
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		var got bytes.Buffer
		writeString(&got, s)
		require.Equal(t, want.String(), got.String()+"\n", "%q", s)
	}
}

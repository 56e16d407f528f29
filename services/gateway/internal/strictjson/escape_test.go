package strictjson_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// PostgreSQL stores neither a NUL character nor half a surrogate pair (in
// text or jsonb): a body holding one is the client's mistake, a 400 that
// names the field, never a failed insert.
func TestDecodeRefusesUnstorableEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, field, msg string
	}{
		{"NUL in a value", `{"path":"/a\u0000"}`, "path", `\u0000`},
		{"NUL in free-form data", `{"data":{"k":"x\u0000y"}}`, "data.k", `\u0000`},
		{"NUL in a free-form name", `{"data":{"a\u0000":1}}`, "data.a\x00", `\u0000`},
		{"lone high surrogate", `{"data":{"k":"\ud83d"}}`, "data.k", "unpaired UTF-16 surrogate"},
		{"lone low surrogate", `{"data":{"k":"\ude00"}}`, "data.k", "unpaired UTF-16 surrogate"},
		{"high surrogate then a character", `{"data":{"k":"\ud83dx"}}`, "data.k", "unpaired UTF-16 surrogate"},
		{"two high surrogates", `{"data":{"k":"\ud83d\ud83d"}}`, "data.k", "unpaired UTF-16 surrogate"},
		{"reversed pair", `{"data":{"k":"\ude00\ud83d"}}`, "data.k", "unpaired UTF-16 surrogate"},
		{"upper-case hex", `{"data":{"k":"\uD83D"}}`, "data.k", "unpaired UTF-16 surrogate"},
		{"in an array", `{"list":[{"name":"ok"},{"name":"\udfff"}]}`, "list[1].name", "unpaired UTF-16 surrogate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v target
			err := strictjson.Decode([]byte(tt.body), &v)
			var de *strictjson.Error
			require.True(t, errors.As(err, &de), "want a *strictjson.Error, got %v", err)
			require.Equal(t, tt.field, de.Field)
			require.Contains(t, de.Message, tt.msg)
		})
	}
}

func TestDecodeAcceptsStorableEscapes(t *testing.T) {
	t.Parallel()
	// An escaped backslash makes the "\u0000" and "\ud800" after it plain
	// text; "\\\u0041" is a backslash then an escaped A; an escaped quote
	// does not end the string; pairs are characters; \u0001 and U+FFFD are
	// storable.
	body := `{"path":"\\u0000 \\\u0041 \u00e9 \ud83d\ude00 \uD83D\uDE00 \u0001 \" \\ud800","data":{"e":"\ufffd"}}`
	var v target
	require.NoError(t, strictjson.Decode([]byte(body), &v))
	require.Equal(t, `\u0000 \A é 😀 😀 `+"\x01"+` " \ud800`, *v.Path)
	require.Equal(t, map[string]any{"e": "\ufffd"}, v.Data)
}

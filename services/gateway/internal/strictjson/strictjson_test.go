package strictjson_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

type inner struct {
	Count *int    `json:"count"`
	Name  *string `json:"name"`
}

type target struct {
	Path  *string        `json:"path"`
	Data  map[string]any `json:"data"`
	Inner *inner         `json:"inner"`
	List  []inner        `json:"list"`
}

func TestDecodeAcceptsAWellFormedObject(t *testing.T) {
	t.Parallel()
	var v target
	err := strictjson.Decode([]byte(` {"path":"/a","data":{"k":[1,{"x":"é"}]},"inner":{"count":3},"list":[{"name":"n"}]} `+"\n"), &v)
	require.NoError(t, err)
	require.Equal(t, "/a", *v.Path)
	require.Equal(t, 3, *v.Inner.Count)
	require.Equal(t, "n", *v.List[0].Name)
	require.Equal(t, []any{float64(1), map[string]any{"x": "é"}}, v.Data["k"])
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		field string
		msg   string
	}{
		{"unknown field", `{"path":"/a","colour":1}`, "colour", "unknown field"},
		{"wrong case", `{"Path":"/a"}`, "Path", `did you mean "path"`},
		{"wrong case nested", `{"inner":{"COUNT":1}}`, "inner.COUNT", `did you mean "count"`},
		{"unknown field in array element", `{"list":[{"name":"a"},{"other":1}]}`, "list[1].other", "unknown field"},
		{"duplicate field", `{"path":"/a","path":"/b"}`, "path", "duplicate field"},
		{"duplicate nested field", `{"inner":{"count":1,"count":2}}`, "inner.count", "duplicate field"},
		{"duplicate key in free-form data", `{"data":{"a":1,"a":2}}`, "data.a", "duplicate field"},
		{"trailing object", `{"path":"/a"}{"path":"/b"}`, "", "unexpected data after the JSON object"},
		{"trailing garbage", `{"path":"/a"} x`, "", "unexpected data after the JSON object"},
		{"not an object", `["path"]`, "", "must be a JSON object"},
		{"empty body", ``, "", "malformed JSON"},
		{"truncated", `{"path":"/a"`, "", "malformed JSON"},
		{"syntax error in a value", `{"data":{"a":tru}}`, "data.a", "malformed JSON"},
		{"invalid UTF-8 in a value", "{\"data\":{\"msg\":\"caf\xe9\"}}", "data.msg", "invalid UTF-8"},
		{"invalid UTF-8 in a name", "{\"pa\xfft\":\"/a\"}", "pa\ufffdt", "invalid UTF-8"},
		{"wrong type", `{"path":5}`, "path", "must be a string"},
		{"wrong nested type", `{"inner":{"count":"3"}}`, "inner.count", "must be an integer"},
		{"fraction for an integer", `{"inner":{"count":1.5}}`, "inner.count", "must be an integer"},
		{"too deep", `{"data":{"a":` + strings.Repeat("[", strictjson.MaxDepth+1) + strings.Repeat("]", strictjson.MaxDepth+1) + `}}`, "", "nested more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v target
			err := strictjson.Decode([]byte(tt.body), &v)
			var de *strictjson.Error
			require.True(t, errors.As(err, &de), "want a *strictjson.Error, got %v", err)
			if tt.field != "" {
				require.Equal(t, tt.field, de.Field)
			}
			require.Contains(t, de.Message, tt.msg)
		})
	}
}

func TestDecodeHandlesAMillionBrackets(t *testing.T) {
	t.Parallel()
	body := `{"data":{"a":` + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000) + `}}`
	var v target
	err := strictjson.Decode([]byte(body), &v)
	require.ErrorContains(t, err, "nested more than")
}

// DecodeValue checks a value as Decode checks the member that holds it,
// naming fields from the value's own name.
func TestDecodeValue(t *testing.T) {
	t.Parallel()
	var data json.RawMessage
	require.NoError(t, strictjson.DecodeValue([]byte(" {\"k\": [1, {\"x\": \"é\"}]}\n"), "data", &data))
	require.JSONEq(t, `{"k":[1,{"x":"é"}]}`, string(data))
	var list []inner
	require.NoError(t, strictjson.DecodeValue([]byte(`[{"count":1},{"name":"n"}]`), "steps", &list))
	require.Equal(t, 1, *list[0].Count)

	tests := []struct {
		name, raw, field, msg string
		into                  any
	}{
		{"duplicate key", `{"a":1,"a":2}`, "data.a", "duplicate field", &json.RawMessage{}},
		{"syntax error", `{"a":tru}`, "data.a", "malformed JSON", &json.RawMessage{}},
		{"empty", ``, "data", "malformed JSON", &json.RawMessage{}},
		{"trailing data", `{} {}`, "data", "unexpected data after the JSON value", &json.RawMessage{}},
		{"NUL escape", `{"a":"\u0000"}`, "data.a", `\u0000`, &json.RawMessage{}},
		{"invalid UTF-8", "{\"a\":\"caf\xe9\"}", "data.a", "invalid UTF-8", &json.RawMessage{}},
		{"unstorable number", `{"a":1e2000000}`, "data.a", "too large", &json.RawMessage{}},
		{"too deep", strings.Repeat("[", strictjson.MaxDepth) + strings.Repeat("]", strictjson.MaxDepth), "", "nested more than", &json.RawMessage{}},
		{"unknown field in an element", `[{"count":1},{"colour":2}]`, "steps[1].colour", "unknown field", &[]inner{}},
		{"wrong type in an element", `[{"count":"1"}]`, "steps.count", "must be an integer", &[]inner{}},
		{"wrong type", `{"count":1}`, "steps", "must be an array", &[]inner{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			field := "data"
			if _, ok := tt.into.(*[]inner); ok {
				field = "steps"
			}
			err := strictjson.DecodeValue([]byte(tt.raw), field, tt.into)
			var de *strictjson.Error
			require.True(t, errors.As(err, &de), "want a *strictjson.Error, got %v", err)
			if tt.field != "" {
				require.Equal(t, tt.field, de.Field)
			}
			require.Contains(t, de.Message, tt.msg)
		})
	}
}

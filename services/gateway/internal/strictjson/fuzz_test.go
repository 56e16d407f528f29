package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// fuzzInner and fuzzTarget cover every kind of field a request type has:
// pointers to scalars, a plain int, a nested struct, a slice of structs, a
// slice of scalars, and free-form JSON (raw, a map, an interface).
type fuzzInner struct {
	Count *int     `json:"count"`
	Name  *string  `json:"name"`
	Ratio *float64 `json:"ratio"`
	On    *bool    `json:"on"`
}

type fuzzTarget struct {
	Path  *string         `json:"path"`
	Data  json.RawMessage `json:"data"`
	Free  map[string]any  `json:"free"`
	Inner *fuzzInner      `json:"inner"`
	List  []fuzzInner     `json:"list"`
	Tags  []string        `json:"tags"`
	N     int             `json:"n"`
	Any   any             `json:"any"`
}

// shape is what the oracle knows of a JSON value's Go type: the names of a
// struct's fields (and their shapes), a slice's element, or nothing
// (free-form: any names, only duplicates matter).
type shape struct {
	fields map[string]*shape
	elem   *shape
}

var (
	innerShape  = &shape{fields: map[string]*shape{"count": nil, "name": nil, "ratio": nil, "on": nil}}
	targetShape = &shape{fields: map[string]*shape{
		"path": nil, "data": nil, "free": nil, "inner": innerShape,
		"list": {elem: innerShape}, "tags": nil, "n": nil, "any": nil,
	}}
)

// strictnessProblem is the oracle: it names the first reason the strict
// decoder must refuse body that encoding/json would let through (invalid
// UTF-8, a body that is not an object, a duplicate, unknown or wrong-case
// name, nesting deeper than MaxDepth), or "" when there is none. It is
// written independently of the decoder: a plain recursive walk over
// encoding/json's tokens with the shape of fuzzTarget written out by hand.
func strictnessProblem(body []byte) string {
	if !utf8.Valid(body) {
		return "invalid UTF-8"
	}
	if unstorableEscape(body) {
		return "unstorable escape"
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return "syntax"
	}
	if tok != json.Delim('{') {
		return "not an object"
	}
	if problem := walkObject(dec, targetShape, 1); problem != "" {
		return problem
	}
	if _, err := dec.Token(); err != io.EOF {
		return "trailing data"
	}
	return ""
}

// unstorableEscape reports a \u0000 escape or an unpaired surrogate
// escape. Once every escaped backslash is blanked out, each remaining \u
// starts an escape; a high surrogate must be followed by a low one and a
// low one preceded by a high one.
func unstorableEscape(body []byte) bool {
	s := strings.ReplaceAll(string(body), `\\`, "__")
	if strings.Contains(s, `\u0000`) {
		return true
	}
	locs := surrogateEscape.FindAllStringIndex(s, -1)
	for i := 0; i < len(locs); i++ {
		high := strings.ContainsAny(s[locs[i][0]+3:locs[i][0]+4], "89abAB")
		pairedWithNext := i+1 < len(locs) && locs[i+1][0] == locs[i][1] &&
			!strings.ContainsAny(s[locs[i+1][0]+3:locs[i+1][0]+4], "89abAB")
		if !high || !pairedWithNext {
			return true
		}
		i++ // the low half
	}
	return false
}

// numberFits tells whether PostgreSQL's numeric type holds a number
// literal: at most 131072 digits before the decimal point and 16383 after
// (as written, trailing zeros included). The arithmetic is done on big
// integers from the literal's parts; exponents beyond a million are
// refused outright, as the decoder does.
func numberFits(literal string) bool {
	m := numberParts.FindStringSubmatch(literal)
	exponent, ok := new(big.Int).SetString(m[4], 10)
	if m[4] == "" {
		exponent, ok = big.NewInt(0), true
	}
	if !ok || exponent.CmpAbs(big.NewInt(1_000_000)) > 0 {
		return false
	}
	scale := new(big.Int).Sub(big.NewInt(int64(len(m[3]))), exponent)
	if scale.Cmp(big.NewInt(16383)) > 0 {
		return false
	}
	significant := strings.TrimLeft(m[2]+m[3], "0")
	if significant == "" {
		return true // zero
	}
	// Digits before the point: those of the integer part from the first
	// significant one, moved by the exponent.
	before := new(big.Int).Add(big.NewInt(int64(len(significant)-len(m[3]))), exponent)
	return before.Cmp(big.NewInt(131072)) <= 0
}

var numberParts = regexp.MustCompile(`^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$`)

var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F][0-9a-fA-F]{2}`)

func walkObject(dec *json.Decoder, s *shape, depth int) string {
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "syntax"
		}
		name := tok.(string)
		if seen[name] {
			return "duplicate"
		}
		seen[name] = true
		var child *shape
		if s != nil && s.fields != nil {
			var known bool
			child, known = s.fields[name]
			if !known {
				for f := range s.fields {
					if strings.EqualFold(f, name) {
						return "wrong case"
					}
				}
				return "unknown"
			}
		}
		if problem := walkValue(dec, child, depth); problem != "" {
			return problem
		}
	}
	if _, err := dec.Token(); err != nil {
		return "syntax"
	}
	return ""
}

// walkValue walks one value inside a container at depth (the body's
// object is depth 1).
func walkValue(dec *json.Decoder, s *shape, depth int) string {
	tok, err := dec.Token()
	if err != nil {
		return "syntax"
	}
	if n, ok := tok.(json.Number); ok && !numberFits(string(n)) {
		return "number out of numeric's range"
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return ""
	}
	if depth+1 > strictjson.MaxDepth {
		return "too deep"
	}
	if delim == '{' {
		if s != nil && s.fields == nil {
			s = nil
		}
		return walkObject(dec, s, depth+1)
	}
	var elem *shape
	if s != nil {
		elem = s.elem
	}
	for dec.More() {
		if problem := walkValue(dec, elem, depth+1); problem != "" {
			return problem
		}
	}
	if _, err := dec.Token(); err != nil {
		return "syntax"
	}
	return ""
}

// FuzzDecode checks that Decode never panics, accepts only what
// encoding/json accepts (with the same result) and the oracle finds nothing
// wrong with, and accepts everything else: a body encoding/json takes and
// the oracle finds nothing wrong with must decode. Seeds:
// testdata/fuzz/FuzzDecode, crashers of earlier runs included.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		var strict fuzzTarget
		strictErr := strictjson.Decode(body, &strict)
		var loose fuzzTarget
		looseErr := json.Unmarshal(body, &loose)
		problem := strictnessProblem(body)

		if strictErr == nil {
			require.NoError(t, looseErr, "accepted what encoding/json refuses: %q", body)
			require.Empty(t, problem, "accepted a body with a problem: %q", body)
			require.Equal(t, loose, strict, "decoded differently from encoding/json: %q", body)
			return
		}
		var de *strictjson.Error
		require.True(t, errors.As(strictErr, &de), "not a *strictjson.Error: %v", strictErr)
		require.NotEmpty(t, de.Message)
		require.True(t, looseErr != nil || problem != "",
			"refused a valid body (%v): %q", strictErr, body)
	})
}

func TestDecodeDepthLimitIsExact(t *testing.T) {
	t.Parallel()
	// The body's object is one level: MaxDepth-1 more fit, one more does not.
	nested := func(levels int) []byte {
		return []byte(`{"any":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}`)
	}
	var v fuzzTarget
	require.NoError(t, strictjson.Decode(nested(strictjson.MaxDepth-1), &v))
	require.ErrorContains(t, strictjson.Decode(nested(strictjson.MaxDepth), &v), "nested more than")
}

func TestDecodeKeepsLargeNumbersInFreeFormData(t *testing.T) {
	t.Parallel()
	// Valid JSON whose numbers do not fit a float64: free-form data keeps
	// them as written; a typed field refuses them as a type error.
	var v fuzzTarget
	require.NoError(t, strictjson.Decode([]byte(`{"data":{"big":1e400,"long":123456789012345678901234567890}}`), &v))
	require.Equal(t, `{"big":1e400,"long":123456789012345678901234567890}`, string(v.Data))

	err := strictjson.Decode([]byte(`{"inner":{"ratio":1e400}}`), &v)
	var de *strictjson.Error
	require.True(t, errors.As(err, &de), "got %v", err)
	require.Equal(t, "inner.ratio", de.Field)
	require.Equal(t, "must be a number", de.Message)
}

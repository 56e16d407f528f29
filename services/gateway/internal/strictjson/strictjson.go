// Package strictjson decodes request bodies strictly. encoding/json accepts
// unknown fields, field names in the wrong case, duplicated fields, trailing
// data and invalid UTF-8 without a word; an API that silently drops or
// rewrites part of what a client sent hides the client's bug, so each of
// these is an error here that names the field at fault. So is valid JSON
// that PostgreSQL cannot store (a \u0000 or unpaired surrogate escape, a
// number beyond its numeric type), which would otherwise fail the insert.
//
// A body is first scanned in one pass (fast.go) that only tells whether
// there is anything to report; when there may be, a slower walk over
// encoding/json's tokens finds it and names the field. Well-formed bodies,
// nearly all of them, never take the walk.
package strictjson

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// MaxDepth bounds how deeply objects and arrays may nest. The walk below
// recurses once per level, so without a bound a body of a million '['
// would cost a million stack frames.
const MaxDepth = 100

// Error is a decoding failure. Field is the dotted JSON path of the field at
// fault ("retryOverride.minRetries"), empty when the body as a whole is.
type Error struct {
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Decode decodes body, which must be one JSON object, into v, a pointer to
// a struct whose fields carry json tags. Every failure is an *Error.
func Decode(body []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		panic("strictjson: Decode needs a pointer to a struct")
	}
	if !utf8.Valid(body) {
		return invalidUTF8(body, t.Elem())
	}
	if bad, msg := firstUnstorableEscape(body); bad >= 0 {
		return placed(body, t.Elem(), bad, msg)
	}
	// The walker finds and names what is wrong; for a body the fast path
	// is sure of, there is nothing to find.
	if !wellFormed(body, t.Elem()) {
		w := newWalker(body, -1)
		if err := w.document(t.Elem()); err != nil {
			return err
		}
	}
	return decodeValues(body, v)
}

// DecodeValue decodes raw, one JSON value of any kind, into v (a pointer)
// with Decode's checks, naming the fields at fault from field ("data.a",
// "steps[1].name"): for JSON that comes in a part of a request rather than
// as its body, as a dashboard form's JSON fields do. Every failure is an
// *Error.
func DecodeValue(raw []byte, field string, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		panic("strictjson: DecodeValue needs a pointer")
	}
	bad, problem := firstInvalid(raw), "invalid UTF-8"
	if bad < 0 {
		bad, problem = firstUnstorableEscape(raw)
	}
	if bad >= 0 {
		w := newWalker(raw, int64(bad))
		_ = w.value(t.Elem(), field, 1) // only the position matters here
		return &Error{Field: cmp.Or(w.badField, field), Message: fmt.Sprintf("contains %s (byte offset %d)", problem, bad)}
	}
	// Depth 1, as a member of a body: the same nesting bound as there.
	w := newWalker(raw, -1)
	if err := w.value(t.Elem(), field, 1); err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return &Error{Field: field, Message: "unexpected data after the JSON value"}
	}
	err := json.Unmarshal(raw, v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return &Error{Field: field, Message: "must be " + describe(typeErr.Type)}
	case errors.As(err, &typeErr):
		return &Error{Field: join(field, typeErr.Field), Message: "must be " + describe(typeErr.Type)}
	default:
		return &Error{Field: field, Message: "malformed JSON: " + err.Error()}
	}
}

// decodeValues runs encoding/json once the walk has checked the names
// (none unknown, one object and nothing after it), so only type mismatches
// remain to be reported. json.Unmarshal decodes the body where it is; a
// json.Decoder would first copy it into a buffer of its own, one more copy
// of the largest bodies at the peak of their handling.
func decodeValues(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr):
		return &Error{Field: typeErr.Field, Message: "must be " + describe(typeErr.Type)}
	default:
		return &Error{Message: "malformed JSON: " + err.Error()}
	}
}

// describe names a Go type the way an API client thinks of JSON values.
func describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "a different JSON type"
	}
}

// invalidUTF8 reports the first invalid byte and, when the walk can place
// it, the field whose name or value holds it.
func invalidUTF8(body []byte, t reflect.Type) error {
	return placed(body, t, firstInvalid(body), "invalid UTF-8")
}

// placed reports a problem found at byte offset bad, naming the field whose
// name or value holds it when the walk can place it.
func placed(body []byte, t reflect.Type, bad int, problem string) error {
	w := newWalker(body, int64(bad))
	_ = w.document(t) // only the position matters here
	if w.badField == "" {
		return &Error{Message: fmt.Sprintf("request body contains %s (byte offset %d)", problem, bad)}
	}
	return &Error{Field: w.badField, Message: fmt.Sprintf("contains %s (byte offset %d)", problem, bad)}
}

func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

// walker reads the body token by token, checking names against the target
// type: every object level for duplicates, struct levels also for unknown
// names and names in the wrong case.
type walker struct {
	dec *json.Decoder
	// bad is the offset of an invalid UTF-8 byte to place (-1: none) and
	// badField the path of the field found holding it.
	bad      int64
	badField string
}

// newWalker walks body. Numbers are read as written (json.Number): the walk
// only checks names, and a number too large for a float64 is valid JSON that
// free-form data may hold; typed fields refuse it when the values are
// decoded.
func newWalker(body []byte, bad int64) *walker {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return &walker{dec: dec, bad: bad}
}

func (w *walker) document(t reflect.Type) error {
	tok, err := w.token("")
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return &Error{Message: "request body must be a JSON object"}
	}
	if err := w.object(t, "", 1); err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return &Error{Message: "unexpected data after the JSON object"}
	}
	return nil
}

// token reads the next token.
func (w *walker) token(path string) (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, &Error{Field: path, Message: "malformed JSON: unexpected end of input"}
		}
		return nil, &Error{Field: path, Message: "malformed JSON: " + err.Error()}
	}
	return tok, nil
}

// note records path as the holder of the invalid byte when the token just
// read passed it.
func (w *walker) note(path string) {
	if w.bad >= 0 && w.badField == "" && w.dec.InputOffset() > w.bad {
		w.badField = path
	}
}

// object walks the members of an object whose '{' has been read.
func (w *walker) object(t reflect.Type, path string, depth int) error {
	fields := jsonFields(t)
	seen := make(map[string]bool)
	for w.dec.More() {
		tok, err := w.token(path)
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		field := join(path, name)
		w.note(field)
		if seen[name] {
			return &Error{Field: field, Message: "duplicate field"}
		}
		seen[name] = true
		child, err := member(fields, name, field)
		if err != nil {
			return err
		}
		if err := w.value(child, field, depth); err != nil {
			return err
		}
	}
	_, err := w.token(path) // the closing '}'
	w.note(path)
	return err
}

// member resolves name in a struct's fields; fields is nil when the object
// is free-form (a map or raw JSON), where any name goes.
func member(fields map[string]reflect.Type, name, path string) (reflect.Type, error) {
	if fields == nil {
		return nil, nil
	}
	if t, ok := fields[name]; ok {
		return t, nil
	}
	for known := range fields {
		if strings.EqualFold(known, name) {
			return nil, &Error{Field: path, Message: fmt.Sprintf("unknown field; field names are case-sensitive, did you mean %q?", known)}
		}
	}
	return nil, &Error{Field: path, Message: "unknown field"}
}

// value walks one value; t is its Go type, or nil when free-form.
func (w *walker) value(t reflect.Type, path string, depth int) error {
	tok, err := w.token(path)
	if err != nil {
		return err
	}
	w.note(path)
	if n, ok := tok.(json.Number); ok {
		if msg := numberProblem(string(n)); msg != "" {
			return &Error{Field: path, Message: msg}
		}
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= MaxDepth {
		return &Error{Field: path, Message: fmt.Sprintf("nested more than %d levels deep", MaxDepth)}
	}
	if delim == '{' {
		return w.object(t, path, depth+1)
	}
	return w.array(elem(t), path, depth+1)
}

func (w *walker) array(t reflect.Type, path string, depth int) error {
	for i := 0; w.dec.More(); i++ {
		if err := w.value(t, fmt.Sprintf("%s[%d]", path, i), depth); err != nil {
			return err
		}
	}
	_, err := w.token(path) // the closing ']'
	w.note(path)
	return err
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// structType returns the struct t points to, or nil when t is not one.
func structType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

func elem(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || (t.Kind() != reflect.Slice && t.Kind() != reflect.Array) {
		return nil
	}
	return t.Elem()
}

// jsonFields maps a struct's JSON names to their types, or returns nil for
// a type that is not a struct (any name is then acceptable).
func jsonFields(t reflect.Type) map[string]reflect.Type {
	s := structType(t)
	if s == nil {
		return nil
	}
	fields := make(map[string]reflect.Type, s.NumField())
	for i := range s.NumField() {
		f := s.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

package strictjson

import (
	"reflect"
	"unicode/utf8"
)

// DecodeWalking is Decode without the fast path: the walker always runs.
func DecodeWalking(body []byte, v any) error {
	t := reflect.TypeOf(v).Elem()
	if !utf8.Valid(body) {
		return invalidUTF8(body, t)
	}
	if bad, msg := firstUnstorableEscape(body); bad >= 0 {
		return placed(body, t, bad, msg)
	}
	if err := newWalker(body, -1).document(t); err != nil {
		return err
	}
	return decodeValues(body, v)
}

// WellFormed is the fast path's verdict on body for v's type.
func WellFormed(body []byte, v any) bool {
	return wellFormed(body, reflect.TypeOf(v).Elem())
}

// Walk is the walker alone: the names, depth and numbers, not the values.
func Walk(body []byte, v any) error {
	return newWalker(body, -1).document(reflect.TypeOf(v).Elem())
}

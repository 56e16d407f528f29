package sundial

import "encoding/json"

// Nullable is a field of a change (PATCH) that may be left out, set to a
// value, or set to null (which clears it). Its zero value is left out.
type Nullable[T any] struct {
	value T
	set   bool
	null  bool
}

// SetTo is a Nullable that sets the field to v.
func SetTo[T any](v T) Nullable[T] { return Nullable[T]{value: v, set: true} }

// SetNull is a Nullable that clears the field.
func SetNull[T any]() Nullable[T] { return Nullable[T]{set: true, null: true} }

// IsZero reports whether the field is left out (encoding/json's omitzero
// asks it).
func (n Nullable[T]) IsZero() bool { return !n.set }

// MarshalJSON writes null or the value.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.null || !n.set {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// Ptr returns a pointer to v, for the optional fields of changes:
// ProjectPatch{Name: sundial.Ptr("Acme")}.
func Ptr[T any](v T) *T { return &v }

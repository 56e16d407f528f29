// Package envconf reads a service's configuration from environment
// variables, collecting every problem so that a service reports all of its
// configuration mistakes at once instead of one per restart.
package envconf

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Lookup finds a variable; os.LookupEnv in services, a map in tests.
type Lookup func(name string) (string, bool)

// Map turns a map into a Lookup, for tests.
func Map(m map[string]string) Lookup {
	return func(name string) (string, bool) { v, ok := m[name]; return v, ok }
}

// Reader reads typed variables and remembers what failed to parse.
type Reader struct {
	lookup Lookup
	errs   []error
}

// New returns a Reader over lookup, or the process environment when nil.
func New(lookup Lookup) *Reader {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return &Reader{lookup: lookup}
}

func (r *Reader) raw(name string) (string, bool) {
	v, ok := r.lookup(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

func (r *Reader) fail(name, value, want string) {
	r.errs = append(r.errs, fmt.Errorf("%s=%q: want %s", name, value, want))
}

// String returns the variable, or def when unset or empty.
func (r *Reader) String(name, def string) string {
	r.read(name, &def)
	return def
}

// Int returns the variable as an integer, or def.
func (r *Reader) Int(name string, def int) int {
	r.read(name, &def)
	return def
}

// Bool returns the variable as a boolean (true/false/1/0), or def.
func (r *Reader) Bool(name string, def bool) bool {
	r.read(name, &def)
	return def
}

// Duration returns the variable as a Go duration ("1.5s", "200ms"), or def.
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	r.read(name, &def)
	return def
}

// List returns the variable split on commas, without empty items, or nil.
func (r *Reader) List(name string) []string {
	var out []string
	r.read(name, &out)
	return out
}

// read sets *p from the variable when it is set and not empty; a value
// that does not parse leaves *p as it was and is recorded. A *p of another
// type than parser takes panics, set or not.
func (r *Reader) read(name string, p any) {
	parse := parser(p)
	if parse == nil {
		panic(fmt.Sprintf("envconf: %s read into a %T", name, p))
	}
	if v, ok := r.raw(name); ok {
		if want := parse(v); want != "" {
			r.fail(name, v, want)
		}
	}
}

// parser returns what sets *p from a value, returning what was wanted
// when the value does not parse; nil for a type it cannot set.
func parser(p any) func(v string) (want string) {
	switch p := p.(type) {
	case *string:
		return func(v string) string { *p = v; return "" }
	case *int:
		return func(v string) string {
			n, err := strconv.Atoi(v)
			if err != nil {
				return "an integer"
			}
			*p = n
			return ""
		}
	case *bool:
		return func(v string) string {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return "true or false"
			}
			*p = b
			return ""
		}
	case *time.Duration:
		return func(v string) string {
			d, err := time.ParseDuration(v)
			if err != nil {
				return `a duration such as "500ms" or "30s"`
			}
			*p = d
			return ""
		}
	case *[]string:
		return func(v string) string { *p = split(v); return "" }
	}
	return nil
}

// split cuts a comma-separated list, dropping empty items.
func split(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Err returns every parse failure, joined, or nil.
func (r *Reader) Err() error {
	return errors.Join(r.errs...)
}

// Load sets the fields of the struct cfg points to from the variables
// their env tags name (`env:"SUNDIAL_LOG_LEVEL"`), through lookup (the
// process environment when nil), and returns every value that failed to
// parse, joined. Untagged struct fields, embedded or not, are searched for
// tagged fields in turn. A variable unset or empty, once trimmed, leaves
// its field as it was, and so does a value that fails to parse: the caller
// fills in the defaults first, and Validate then judges the other fields
// without reporting the same mistake twice. Every tagged variable is
// looked up, set or not, so a recording lookup learns all a Config reads.
//
// Tagged fields are string, int, bool (strconv.ParseBool), time.Duration
// (time.ParseDuration) or []string (comma-separated, items trimmed, empty
// ones dropped). A tag on a field of any other type, or an unexported one,
// is a programming error and panics, whether the variable is set or not.
func Load(lookup Lookup, cfg any) error {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("envconf.Load: got a %T, want a pointer to a struct", cfg))
	}
	r := New(lookup)
	r.load(v.Elem())
	return r.Err()
}

// load reads the tagged fields of s, and of its untagged struct fields.
func (r *Reader) load(s reflect.Value) {
	for i := range s.NumField() {
		f, field := s.Type().Field(i), s.Field(i)
		name, tagged := f.Tag.Lookup("env")
		switch {
		case tagged:
			if !field.CanSet() || parser(field.Addr().Interface()) == nil {
				panic(fmt.Sprintf("envconf.Load: %s.%s (%s) is tagged env:%q: want an exported string, int, bool, time.Duration or []string",
					s.Type(), f.Name, f.Type, name))
			}
			r.read(name, field.Addr().Interface())
		case f.Type.Kind() == reflect.Struct:
			r.load(field)
		}
	}
}

// Check collects validation failures for a Config's Validate method.
type Check struct{ errs []error }

// That records msg (formatted with args) when ok is false.
func (c *Check) That(ok bool, format string, args ...any) {
	if !ok {
		c.errs = append(c.errs, fmt.Errorf(format, args...))
	}
}

// Err returns the recorded failures, joined, or nil.
func (c *Check) Err() error {
	return errors.Join(c.errs...)
}

// ExitCode is the exit status of a service whose configuration is wrong,
// the same for every service: as a wrong command line does, it exits 2.
const ExitCode = 2

// Error marks err as the configuration's: its text starts with
// "configuration: ", after which each service's main puts its name, and
// ExitStatus gives ExitCode for it.
type Error struct{ Err error }

func (e *Error) Error() string { return "configuration: " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// ExitStatus is the exit status of a service that stopped on err: ExitCode
// for a configuration error, 1 for any other.
func ExitStatus(err error) int {
	var ce *Error
	if errors.As(err, &ce) {
		return ExitCode
	}
	return 1
}

// Package envconf reads a service's configuration from environment
// variables, collecting every problem so that a service reports all of its
// configuration mistakes at once instead of one per restart.
package envconf

import (
	"errors"
	"fmt"
	"os"
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
	if v, ok := r.raw(name); ok {
		return v
	}
	return def
}

// Int returns the variable as an integer, or def.
func (r *Reader) Int(name string, def int) int {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(name, v, "an integer")
		return def
	}
	return n
}

// Bool returns the variable as a boolean (true/false/1/0), or def.
func (r *Reader) Bool(name string, def bool) bool {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, v, "true or false")
		return def
	}
	return b
}

// Duration returns the variable as a Go duration ("1.5s", "200ms"), or def.
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.fail(name, v, `a duration such as "500ms" or "30s"`)
		return def
	}
	return d
}

// List returns the variable split on commas, without empty items, or nil.
func (r *Reader) List(name string) []string {
	v, ok := r.raw(name)
	if !ok {
		return nil
	}
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

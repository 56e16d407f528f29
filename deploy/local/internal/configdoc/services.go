package configdoc

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/envconf"
	dispatcher "github.com/sundial-run/sundial/services/dispatcher/app"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	notifier "github.com/sundial-run/sundial/services/notifier/app"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// Loader is a service's ConfigFromEnv, its Config as an any.
type Loader func(envconf.Lookup) (any, error)

// Service is a service the tables document.
type Service struct {
	// Name is the service's folder under services/, and its name in the
	// "used by" column and the section headings.
	Name string
	// Load reads its Config.
	Load Loader
}

// ConfigFile is the path of the service's Config, from the repository.
func (s Service) ConfigFile() string {
	return filepath.Join("services", s.Name, "app", "config.go")
}

// Services are the services, in the order the "used by" column names them.
var Services = []Service{
	{"gateway", func(l envconf.Lookup) (any, error) { return gateway.ConfigFromEnv(l) }},
	{"scheduler", func(l envconf.Lookup) (any, error) { return scheduler.ConfigFromEnv(l) }},
	{"dispatcher", func(l envconf.Lookup) (any, error) { return dispatcher.ConfigFromEnv(l) }},
	{"notifier", func(l envconf.Lookup) (any, error) { return notifier.ConfigFromEnv(l) }},
}

// Examples are valid values of the variables with no default (a service
// refuses to start without them), given to every load that needs the rest
// of a Config.
var Examples = map[string]string{
	"SUNDIAL_SECRET_KEYS": secrettest.Keys,
}

// WithExamples gives load the Examples of the variables lookup does not set.
func WithExamples(load Loader) Loader {
	return func(l envconf.Lookup) (any, error) {
		return load(func(name string) (string, bool) {
			if v, ok := l(name); ok {
				return v, ok
			}
			v, ok := Examples[name]
			return v, ok
		})
	}
}

// Defaults are the default cells of the variables load reads: Required for
// those it refuses to start without, Unset for those with no value, else
// the value backquoted. A variable read through a wrapper of the Config
// (no Config field carries its tag) starts at its zero value: Unset.
func Defaults(load Loader) (map[string]string, error) {
	cells := map[string]string{}
	if _, err := load(envconf.Map(nil)); err != nil {
		for v := range Examples {
			if strings.Contains(err.Error(), v) {
				cells[v] = Required
			}
		}
	}
	cfg, err := WithExamples(load)(envconf.Map(nil))
	if err != nil {
		return nil, fmt.Errorf("the defaults must be a valid configuration: %w", err)
	}
	collectDefaults(reflect.ValueOf(cfg), cells)
	return cells, nil
}

// collectDefaults adds the env-tagged fields of v, and of the structs it
// holds, to cells.
func collectDefaults(v reflect.Value, cells map[string]string) {
	for i := range v.NumField() {
		f, value := v.Type().Field(i), v.Field(i)
		name := f.Tag.Get("env")
		switch {
		case name != "":
			if _, ok := cells[name]; !ok {
				cells[name] = defaultCell(value)
			}
		case value.Kind() == reflect.Struct:
			collectDefaults(value, cells)
		}
	}
}

// defaultCell writes a default as the tables do.
func defaultCell(v reflect.Value) string {
	var s string
	switch x := v.Interface().(type) {
	case time.Duration:
		s = egress.FormatDuration(x)
	case bool:
		s = strconv.FormatBool(x)
	default:
		if v.Kind() == reflect.Slice {
			parts := make([]string, v.Len())
			for i := range parts {
				parts[i] = fmt.Sprint(v.Index(i).Interface())
			}
			s = strings.Join(parts, ",")
		} else {
			s = fmt.Sprint(x)
		}
	}
	if s == "" {
		return Unset
	}
	return "`" + s + "`"
}

package suite

import (
	"strings"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/telemetry"
)

// settings are the variables the runner itself reads.
type settings struct {
	dataDir      string // SUNDIAL_LOCAL_DATA_DIR, default .data
	natsURL      string // SUNDIAL_NATS_URL: use this server instead of an embedded one
	logLevel     string // SUNDIAL_LOG_LEVEL
	headerPrefix string // SUNDIAL_HEADER_PREFIX, for the demo receiver
	demo         bool   // SUNDIAL_DEMO: create the demo project
}

func readSettings(lookup envconf.Lookup) (settings, error) {
	r := envconf.New(lookup)
	s := settings{
		dataDir:      r.String("SUNDIAL_LOCAL_DATA_DIR", ".data"),
		natsURL:      r.String("SUNDIAL_NATS_URL", ""),
		logLevel:     r.String("SUNDIAL_LOG_LEVEL", "info"),
		headerPrefix: r.String("SUNDIAL_HEADER_PREFIX", "Sundial"),
		demo:         r.Bool("SUNDIAL_DEMO", true),
	}
	if err := r.Err(); err != nil {
		return s, err
	}
	return s, telemetry.ParseLevel(s.logLevel)
}

// environment is what the services read their configuration from: the
// person's variables, and where they left one unset, what the runner decided.
type environment struct {
	user    envconf.Lookup
	decided map[string]string
}

// lookup is the envconf.Lookup the services get.
func (e *environment) lookup(name string) (string, bool) {
	if v, ok := e.user(name); ok && strings.TrimSpace(v) != "" {
		return v, true
	}
	v, ok := e.decided[name]
	return v, ok
}

// decide sets name unless the person set it, and reports whether it did.
func (e *environment) decide(name, value string) bool {
	if v, ok := e.user(name); ok && strings.TrimSpace(v) != "" {
		return false
	}
	e.decided[name] = value
	return true
}

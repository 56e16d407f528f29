package validate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/secretbox"
	dispatcher "github.com/sundial-run/sundial/services/dispatcher/app"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	notifier "github.com/sundial-run/sundial/services/notifier/app"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// services maps a container's command (its first word, or "gateway
// migrate") to the service's own ConfigFromEnv: the check reads a
// container's environment with the code the container runs.
var services = map[string]func(envconf.Lookup) error{
	"gateway migrate": func(l envconf.Lookup) error { _, err := gateway.MigrateConfigFromEnv(l); return err },
	"gateway":         func(l envconf.Lookup) error { _, err := gateway.ConfigFromEnv(l); return err },
	"scheduler":       func(l envconf.Lookup) error { _, err := scheduler.ConfigFromEnv(l); return err },
	"dispatcher":      func(l envconf.Lookup) error { _, err := dispatcher.ConfigFromEnv(l); return err },
	"notifier":        func(l envconf.Lookup) error { _, err := notifier.ConfigFromEnv(l); return err },
}

// mustSet are the variables whose defaults suit only a service on the
// developer's machine (PostgreSQL and NATS on 127.0.0.1, the gateway's
// address as http://127.0.0.1:8080, no keyring, no mail server): a
// deployment sets each of them that a service reads. (Listening addresses,
// such as SUNDIAL_HTTP_ADDR's :8080, suit a container as they are.)
// Which service reads which is not listed here but found by running the
// service's ConfigFromEnv.
var mustSet = []string{
	"SUNDIAL_DATABASE_URL",
	"SUNDIAL_NATS_URL",
	secretbox.EnvVar,
	"SUNDIAL_PUBLIC_URL",
	"SUNDIAL_NOTIFIER_SMTP_HOST",
	"SUNDIAL_NOTIFIER_SMTP_FROM",
}

// secretStandIn is the value checked for a variable that comes from a
// Secret, which the chart only names: any non-empty value, except for
// the keyring, which must parse.
func secretStandIn(name string) string {
	if name == secretbox.EnvVar {
		return secrettest.Keys
	}
	return "from-a-secret"
}

// readBy returns the variables service's ConfigFromEnv reads.
func readBy(service string, env map[string]string) (map[string]bool, error) {
	read := map[string]bool{}
	err := services[service](func(name string) (string, bool) {
		read[name] = true
		v, ok := env[name]
		return v, ok
	})
	return read, err
}

// known is every variable some service reads.
var known = sync.OnceValue(func() map[string]bool {
	all := map[string]bool{}
	for s := range services {
		read, _ := readBy(s, nil)
		maps.Copy(all, read)
	}
	return all
})

// CheckEnv checks the environment one container of service gets: the
// service accepts it, it sets every mustSet variable the service reads,
// and it sets no SUNDIAL_ variable that no service reads (a typo).
func CheckEnv(service string, env map[string]string) error {
	if _, ok := services[service]; !ok {
		return fmt.Errorf("%q is not a Sundial service (want one of %s)", service, strings.Join(slices.Sorted(maps.Keys(services)), ", "))
	}
	read, err := readBy(service, env)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("%s rejects its environment: %w", service, err))
	}
	for _, name := range mustSet {
		if _, set := env[name]; read[name] && !set {
			errs = append(errs, fmt.Errorf("%s reads %s, which is not set: its default suits only a developer's machine", service, name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if strings.HasPrefix(name, "SUNDIAL_") && !known()[name] {
			errs = append(errs, fmt.Errorf("%s is read by no Sundial service", name))
		}
	}
	return errors.Join(errs...)
}

// serviceOf names the Sundial service a container runs, from its command;
// "" when it runs something else.
func serviceOf(command []string) string {
	if len(command) == 0 {
		return ""
	}
	if len(command) > 1 {
		if _, ok := services[command[0]+" "+command[1]]; ok {
			return command[0] + " " + command[1]
		}
	}
	if _, ok := services[command[0]]; ok {
		return command[0]
	}
	return ""
}

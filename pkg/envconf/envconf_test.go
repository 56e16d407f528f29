package envconf_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
)

func reader(vars map[string]string) *envconf.Reader {
	return envconf.New(envconf.Map(vars))
}

func TestString(t *testing.T) {
	t.Parallel()
	r := reader(map[string]string{"SET": "  value ", "EMPTY": "", "BLANK": "   "})

	require.Equal(t, "value", r.String("SET", "def"), "surrounding spaces are trimmed")
	require.Equal(t, "def", r.String("EMPTY", "def"), "empty counts as unset")
	require.Equal(t, "def", r.String("BLANK", "def"))
	require.Equal(t, "def", r.String("MISSING", "def"))
	require.NoError(t, r.Err())
}

func TestInt(t *testing.T) {
	t.Parallel()
	r := reader(map[string]string{"N": " 42", "NEG": "-3", "BAD": "4x"})

	require.Equal(t, 42, r.Int("N", 1))
	require.Equal(t, -3, r.Int("NEG", 1))
	require.Equal(t, 7, r.Int("MISSING", 7))
	require.Equal(t, 7, r.Int("BAD", 7), "a bad value yields the default")
	err := r.Err()
	require.Error(t, err)
	require.Contains(t, err.Error(), `BAD="4x"`)
	require.Contains(t, err.Error(), "integer")
}

func TestBool(t *testing.T) {
	t.Parallel()
	r := reader(map[string]string{"T": "true", "ONE": "1", "F": "false", "ZERO": "0", "BAD": "yes"})

	require.True(t, r.Bool("T", false))
	require.True(t, r.Bool("ONE", false))
	require.False(t, r.Bool("F", true))
	require.False(t, r.Bool("ZERO", true))
	require.True(t, r.Bool("MISSING", true))
	require.True(t, r.Bool("BAD", true))
	require.ErrorContains(t, r.Err(), `BAD="yes"`)
}

func TestDuration(t *testing.T) {
	t.Parallel()
	r := reader(map[string]string{"D": "1.5s", "MS": "200ms", "BAD": "30"})

	require.Equal(t, 1500*time.Millisecond, r.Duration("D", time.Minute))
	require.Equal(t, 200*time.Millisecond, r.Duration("MS", time.Minute))
	require.Equal(t, time.Minute, r.Duration("MISSING", time.Minute))
	require.Equal(t, time.Minute, r.Duration("BAD", time.Minute), "a number without a unit is not a duration")
	require.ErrorContains(t, r.Err(), `BAD="30"`)
}

func TestList(t *testing.T) {
	t.Parallel()
	r := reader(map[string]string{"L": " 10.0.0.0/8, ,192.168.0.0/16,, ", "ONE": "a", "EMPTY": ""})

	require.Equal(t, []string{"10.0.0.0/8", "192.168.0.0/16"}, r.List("L"))
	require.Equal(t, []string{"a"}, r.List("ONE"))
	require.Nil(t, r.List("EMPTY"))
	require.Nil(t, r.List("MISSING"))
	require.NoError(t, r.Err())
}

func TestErrCollectsEveryFailure(t *testing.T) {
	t.Parallel()
	r := reader(map[string]string{
		"SUNDIAL_A": "x", "SUNDIAL_B": "maybe", "SUNDIAL_C": "soon", "SUNDIAL_OK": "5",
	})
	r.Int("SUNDIAL_A", 0)
	r.Bool("SUNDIAL_B", false)
	r.Duration("SUNDIAL_C", 0)
	r.Int("SUNDIAL_OK", 0)

	err := r.Err()
	require.Error(t, err)
	for _, name := range []string{"SUNDIAL_A", "SUNDIAL_B", "SUNDIAL_C"} {
		require.Contains(t, err.Error(), name)
	}
	require.NotContains(t, err.Error(), "SUNDIAL_OK")
	var joined interface{ Unwrap() []error }
	require.True(t, errors.As(err, &joined))
	require.Len(t, joined.Unwrap(), 3, "one error per bad variable")
}

func TestNilLookupReadsTheProcessEnvironment(t *testing.T) {
	t.Parallel()
	// PATH is set in any environment tests run in; t.Setenv would forbid t.Parallel.
	path, ok := os.LookupEnv("PATH")
	require.True(t, ok)
	require.Equal(t, strings.TrimSpace(path), envconf.New(nil).String("PATH", ""))
}

func TestCheck(t *testing.T) {
	t.Parallel()
	var ok envconf.Check
	ok.That(true, "never")
	require.NoError(t, ok.Err())

	var c envconf.Check
	c.That(false, "concurrency %d: want at least 1", 0)
	c.That(true, "fine")
	c.That(false, "log level %q: unknown", "loud")
	err := c.Err()
	require.Error(t, err)
	require.Contains(t, err.Error(), "concurrency 0: want at least 1")
	require.Contains(t, err.Error(), `log level "loud": unknown`)
	require.NotContains(t, err.Error(), "fine")
}

// loaded is a Config as a service declares it: tagged fields of every kind
// Load reads, an untagged one it leaves alone, and nested structs.
type loaded struct {
	Name    string        `env:"T_NAME"`
	Count   int           `env:"T_COUNT"`
	On      bool          `env:"T_ON"`
	Wait    time.Duration `env:"T_WAIT"`
	Hosts   []string      `env:"T_HOSTS"`
	Ignored string
	SMTP    struct {
		Port int `env:"T_SMTP_PORT"`
	}
	embedded
}

type embedded struct {
	Level string `env:"T_LEVEL"`
}

func defaults() loaded {
	c := loaded{Name: "def", Count: 7, On: true, Wait: time.Minute, Hosts: []string{"h"}, Ignored: "kept"}
	c.SMTP.Port = 587
	c.Level = "info"
	return c
}

func TestLoadReadsEveryKind(t *testing.T) {
	t.Parallel()
	cfg := defaults()
	err := envconf.Load(envconf.Map(map[string]string{
		"T_NAME": " value ", "T_COUNT": "-3", "T_ON": "0", "T_WAIT": "1.5s", "T_HOSTS": " a, ,b,, ",
		"T_SMTP_PORT": "25", "T_LEVEL": "debug", "Ignored": "x",
	}), &cfg)
	require.NoError(t, err)
	want := loaded{Name: "value", Count: -3, On: false, Wait: 1500 * time.Millisecond, Hosts: []string{"a", "b"}, Ignored: "kept"}
	want.SMTP.Port = 25
	want.Level = "debug"
	require.Equal(t, want, cfg)
}

func TestLoadKeepsTheDefaultsOfUnsetAndEmptyVariables(t *testing.T) {
	t.Parallel()
	unset := defaults()
	require.NoError(t, envconf.Load(envconf.Map(nil), &unset))
	require.Equal(t, defaults(), unset)

	empty := defaults()
	require.NoError(t, envconf.Load(envconf.Map(map[string]string{
		"T_NAME": "", "T_COUNT": " ", "T_ON": "", "T_WAIT": "\t", "T_HOSTS": "", "T_SMTP_PORT": "", "T_LEVEL": "  ",
	}), &empty))
	require.Equal(t, defaults(), empty, "empty or blank counts as unset")
}

func TestLoadLooksUpEveryTaggedVariable(t *testing.T) {
	t.Parallel()
	var names []string
	cfg := defaults()
	require.NoError(t, envconf.Load(func(name string) (string, bool) {
		names = append(names, name)
		return "", false
	}, &cfg))
	require.ElementsMatch(t, []string{"T_NAME", "T_COUNT", "T_ON", "T_WAIT", "T_HOSTS", "T_SMTP_PORT", "T_LEVEL"}, names)
}

func TestLoadReportsEveryFailureAtOnce(t *testing.T) {
	t.Parallel()
	cfg := defaults()
	err := envconf.Load(envconf.Map(map[string]string{
		"T_COUNT": "4x", "T_ON": "yes", "T_WAIT": "30", "T_SMTP_PORT": "smtp", "T_NAME": "fine",
	}), &cfg)
	require.Error(t, err)
	var joined interface{ Unwrap() []error }
	require.True(t, errors.As(err, &joined))
	require.Len(t, joined.Unwrap(), 4, "one error per bad variable")
	require.ErrorContains(t, err, `T_COUNT="4x": want an integer`)
	require.ErrorContains(t, err, `T_ON="yes": want true or false`)
	require.ErrorContains(t, err, `T_WAIT="30": want a duration such as "500ms" or "30s"`)
	require.ErrorContains(t, err, `T_SMTP_PORT="smtp": want an integer`)

	want := defaults()
	want.Name = "fine"
	require.Equal(t, want, cfg, "a value that fails to parse keeps the default")
}

func TestLoadNilLookupReadsTheProcessEnvironment(t *testing.T) {
	t.Parallel()
	path, ok := os.LookupEnv("PATH")
	require.True(t, ok)
	var cfg struct {
		Path string `env:"PATH"`
	}
	require.NoError(t, envconf.Load(nil, &cfg))
	require.Equal(t, strings.TrimSpace(path), cfg.Path)
}

// rated has a tagged field of a type Load does not read.
type rated struct {
	Rate float64 `env:"T_RATE"`
}

func TestLoadPanicsOnAFieldItCannotSet(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t,
		`envconf.Load: envconf_test.rated.Rate (float64) is tagged env:"T_RATE": want an exported string, int, bool, time.Duration or []string`,
		func() { _ = envconf.Load(envconf.Map(nil), &rated{}) }, "the mistake shows even with the variable unset")

	var unexported struct {
		level string `env:"T_LEVEL"`
	}
	require.Panics(t, func() { _ = envconf.Load(envconf.Map(map[string]string{"T_LEVEL": "debug"}), &unexported) })
	require.Empty(t, unexported.level)

	require.Panics(t, func() { _ = envconf.Load(envconf.Map(nil), defaults()) }, "not a pointer")
}

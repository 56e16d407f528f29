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

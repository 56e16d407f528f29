package child

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type bundle struct {
	signals chan os.Signal
}

func setup(t *testing.T) bundle {
	t.Helper()
	return bundle{signals: make(chan os.Signal, 1)}
}

// result is what Run returned, delivered on a channel.
type result struct {
	code int
	err  error
}

// startWaiting runs a shell script that prints "ready" once its trap is set,
// and returns when it has.
func (b bundle) startWaiting(t *testing.T, script string, grace time.Duration) <-chan result {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	// Closed when the test ends: Run's goroutine hands w to the child.
	t.Cleanup(func() { r.Close(); w.Close() })
	cmd := exec.Command("sh", "-c", script+"; echo ready; while :; do sleep 0.05; done")
	cmd.Stdout = w
	results := make(chan result, 1)
	go func() {
		code, err := Run(cmd, b.signals, grace)
		results <- result{code, err}
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	return results
}

func TestExitCodeAndEnvironmentPassThrough(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var out bytes.Buffer
	cmd := exec.Command("sh", "-c", `printf %s "$SUNDIAL_TEST_DATABASE_URL"; exit 3`)
	cmd.Env = append(os.Environ(), "SUNDIAL_TEST_DATABASE_URL=postgres://x")
	cmd.Stdout = &out

	code, err := Run(cmd, b.signals, time.Second)

	require.NoError(t, err)
	require.Equal(t, 3, code)
	require.Equal(t, "postgres://x", out.String())
}

func TestSuccessIsZero(t *testing.T) {
	t.Parallel()
	b := setup(t)

	code, err := Run(exec.Command("true"), b.signals, time.Second)

	require.NoError(t, err)
	require.Equal(t, 0, code)
}

func TestSignalIsPassedOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	results := b.startWaiting(t, `trap 'exit 7' TERM`, time.Minute)

	b.signals <- syscall.SIGTERM

	got := <-results
	require.NoError(t, got.err)
	require.Equal(t, 7, got.code, "the child's own exit code, chosen by its trap")
}

func TestChildIgnoringSignalsIsKilledAfterGrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	results := b.startWaiting(t, `trap '' TERM INT`, 50*time.Millisecond)

	b.signals <- syscall.SIGINT

	got := <-results
	require.NoError(t, got.err)
	require.Equal(t, 128+int(syscall.SIGKILL), got.code)
}

func TestMissingCommandIs127(t *testing.T) {
	t.Parallel()
	b := setup(t)

	code, err := Run(exec.Command("/nonexistent/sundial-command"), b.signals, time.Second)

	require.Error(t, err)
	require.Equal(t, 127, code)
}

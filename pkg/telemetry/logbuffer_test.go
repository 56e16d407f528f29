package telemetry_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/telemetry"
)

// output is a writer the test reads while the buffer writes to it; it
// counts the writes.
type output struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writes++
	return o.buf.Write(p)
}

func (o *output) lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Split(strings.TrimSuffix(o.buf.String(), "\n"), "\n")
}

func (o *output) count() (lines, writes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Count(o.buf.String(), "\n"), o.writes
}

func setup(t *testing.T) (*output, *telemetry.LogBuffer) {
	t.Helper()
	out := &output{}
	b := telemetry.NewLogBuffer(out)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return out, b
}

func TestLinesGoOutTogetherSoonAfterTheFirst(t *testing.T) {
	t.Parallel()
	out, b := setup(t)
	for i := range 100 {
		_, err := b.Write([]byte(strings.Repeat("x", i) + "\n"))
		require.NoError(t, err)
	}
	// Not written one by one: the timer writes the waiting lines at once.
	require.Eventually(t, func() bool {
		lines, _ := out.count()
		return lines == 100
	}, 10*time.Second, time.Millisecond)
	_, writes := out.count()
	require.Less(t, writes, 10, "lines written together")
	require.Equal(t, strings.Repeat("x", 99), out.lines()[99], "in order, whole")
}

func TestAFullBufferIsWrittenAtOnce(t *testing.T) {
	t.Parallel()
	out, b := setup(t)
	line := []byte(strings.Repeat("y", 1023) + "\n")
	for range 64 {
		_, err := b.Write(line)
		require.NoError(t, err)
	}
	lines, writes := out.count()
	require.Equal(t, 64, lines, "64 KiB waiting is written without waiting for the timer")
	require.Equal(t, 1, writes)
}

// A line that lands in the buffer just emptied by a full flush or a
// warning still goes out on the timer: the timer is set by whichever line
// finds the buffer empty.
func TestALineAfterAFlushGoesOutOnTheTimer(t *testing.T) {
	t.Parallel()
	out := &output{}
	log, b := telemetry.NewBufferedLogger(out, "test", "info")
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	for i := range 3 {
		log.Info("delivery", "n", i)
		log.Warn("slow receiver", "n", i)
		log.Info("after the warning", "n", i)
		want := 3 * (i + 1)
		require.Eventually(t, func() bool {
			lines, _ := out.count()
			return lines == want
		}, 10*time.Second, time.Millisecond, "round %d: the line after the warning was never written", i)
	}
}

func TestCloseWritesWhatWaitsAndLaterLinesGoStraightThrough(t *testing.T) {
	t.Parallel()
	out, b := setup(t)
	_, err := b.Write([]byte("first\n"))
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.Equal(t, []string{"first"}, out.lines())
	_, err = b.Write([]byte("after\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"first", "after"}, out.lines())
}

func TestAWarningIsWrittenAtOnceWithTheLinesBeforeIt(t *testing.T) {
	t.Parallel()
	out := &output{}
	log, b := telemetry.NewBufferedLogger(out, "test", "info")
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	log.Info("delivery", "n", 1)
	log.With("hook_id", "h1").Warn("slow receiver")
	lines := out.lines()
	require.Len(t, lines, 2, "no wait for the timer")
	require.Contains(t, lines[0], `"msg":"delivery"`)
	require.Contains(t, lines[1], `"msg":"slow receiver"`)
	require.Contains(t, lines[1], `"hook_id":"h1"`)
	require.Contains(t, lines[1], `"service":"test"`)
}

// BenchmarkLogLine is a delivery's log line written to a file, one system
// call a line (NewLogger, as before) against the buffer's writes
// (NewBufferedLogger), side by side in one run.
func BenchmarkLogLine(b *testing.B) {
	line := func(b *testing.B, log *slog.Logger) {
		b.ReportAllocs()
		for b.Loop() {
			log.LogAttrs(context.Background(), slog.LevelInfo, "delivery",
				slog.String("hook_id", "0193a5f0-7c1e-7d55-9c0a-2f4d6e8b1a3c"),
				slog.String("project_id", "0193a5f0-0000-7000-8000-000000000001"),
				slog.Int64("attempt", 1), slog.Int64("lease_seq", 42),
				slog.String("host", "receiver.example:443"), slog.String("outcome", "success"),
				slog.Int("status_code", 200), slog.Int64("duration_ms", 3))
		}
	}
	open := func(b *testing.B) *os.File {
		f, err := os.Create(filepath.Join(b.TempDir(), "log"))
		require.NoError(b, err)
		b.Cleanup(func() { _ = f.Close() })
		return f
	}
	b.Run("direct", func(b *testing.B) {
		line(b, telemetry.NewLogger(open(b), "dispatcher", "info"))
	})
	b.Run("buffered", func(b *testing.B) {
		log, buf := telemetry.NewBufferedLogger(open(b), "dispatcher", "info")
		b.Cleanup(func() { _ = buf.Close() })
		line(b, log)
	})
}

package logscan_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/logscan"
)

func TestScanAndSummarize(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "scheduler.log")
	lines := `{"time":"2026-11-21T10:00:00.100Z","level":"INFO","msg":"claimed due hooks","via":"poll","count":300}
{"time":"2026-11-21T10:00:00.050Z","level":"INFO","msg":"claimed due hooks","via":"just-in-time","count":100}
not json at all
{"time":"2026-11-21T10:00:00.200Z","level":"INFO","msg":"applied attempt result","hook_id":"x"}
{"time":"2026-11-21T10:00:00.500Z","level":"INFO","msg":"claimed due hooks","via":"poll","count":600}
`
	require.NoError(t, os.WriteFile(path, []byte(lines), 0o600))
	events, err := logscan.Scan(path, "claimed due hooks")
	require.NoError(t, err)
	require.Len(t, events, 3)
	applied, err := logscan.Scan(path, "applied attempt result")
	require.NoError(t, err)
	require.Equal(t, []logscan.Event{{At: time.Date(2026, 11, 21, 10, 0, 0, 200e6, time.UTC), Count: 1}}, applied)

	ref := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	st := logscan.Summarize("claimed", events, ref, ref)
	require.Equal(t, 1000, st.Count)
	require.Equal(t, 50.0, st.FirstMs)
	require.Equal(t, 500.0, st.HalfMs, "half of 1000 is reached by the third line (100+300 < 500)")
	require.Equal(t, 500.0, st.AllMs)
	require.Equal(t, 2222.2, st.PerSecond, "1000 hooks over 450 ms")
	require.Equal(t, map[string]int{"poll": 900, "just-in-time": 100}, st.ByVia)

	late := logscan.Summarize("claimed", events, ref, ref.Add(300*time.Millisecond))
	require.Equal(t, 600, late.Count, "events before since are left out")
}

func TestCounterReadsOnlyWholeNewLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "scheduler.log")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	c := logscan.NewCounter(path, "applied attempt result")
	_, err = f.WriteString(`{"msg":"applied attempt result"}` + "\n" + `{"msg":"claimed due hooks"}` + "\n" + `{"msg":"applied att`)
	require.NoError(t, err)
	n, err := c.Poll()
	require.NoError(t, err)
	require.Equal(t, 1, n, "the partial last line is not counted yet")
	_, err = f.WriteString(`empt result"}` + "\n")
	require.NoError(t, err)
	n, err = c.Poll()
	require.NoError(t, err)
	require.Equal(t, 2, n, "the completed line is counted once")
	n, err = c.Poll()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	_, err = f.WriteString(`{"msg":"applied attempt result","count":40}` + "\n")
	require.NoError(t, err)
	n, err = c.Poll()
	require.NoError(t, err)
	require.Equal(t, 42, n, "a line's count field counts that many")
}

func TestScanFieldsReadsTheNamedIntegers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "scheduler.log")
	lines := `{"time":"2026-11-21T10:00:02Z","level":"INFO","msg":"expired hooks deleted","hooks_deleted":10000,"attempts_deleted":10000,"batches":10,"more":true}
{"time":"2026-11-21T10:00:01Z","level":"INFO","msg":"expired hooks deleted","hooks_deleted":500,"attempts_deleted":700,"batches":1,"more":false}
{"time":"2026-11-21T10:00:03Z","level":"INFO","msg":"applied attempt results","count":3}
not json "msg":"expired hooks deleted"
`
	require.NoError(t, os.WriteFile(path, []byte(lines), 0o600))
	records, err := logscan.ScanFields(path, "expired hooks deleted", "hooks_deleted", "attempts_deleted", "absent")
	require.NoError(t, err)
	require.Equal(t, []logscan.Record{
		{At: time.Date(2026, 11, 21, 10, 0, 1, 0, time.UTC), Values: map[string]int64{"hooks_deleted": 500, "attempts_deleted": 700}},
		{At: time.Date(2026, 11, 21, 10, 0, 2, 0, time.UTC), Values: map[string]int64{"hooks_deleted": 10000, "attempts_deleted": 10000}},
	}, records, "in time order, a field a line lacks left out, other messages and non-JSON lines skipped")
}

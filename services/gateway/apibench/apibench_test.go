package apibench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/apibench"
)

func TestSummarizeUsesNearestRank(t *testing.T) {
	t.Parallel()
	var latencies []time.Duration
	for i := 100; i >= 1; i-- { // out of order on purpose
		latencies = append(latencies, time.Duration(i)*time.Millisecond)
	}
	got := apibench.Summarize(latencies)
	require.Equal(t, apibench.Latency{Count: 100, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}, got)
	require.Equal(t, 100*time.Millisecond, latencies[0], "the input is left as it was")

	one := apibench.Summarize([]time.Duration{7})
	require.Equal(t, apibench.Latency{Count: 1, P50: 7, P99: 7, Max: 7}, one)
	require.Equal(t, apibench.Latency{}, apibench.Summarize(nil))
}

// TestClosedLoopCountsEverySend stops the run by cancelling it after a
// number of sends, so that it never depends on how fast the machine is.
func TestClosedLoopCountsEverySend(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var sends atomic.Int64
	failure := errors.New("connection refused")
	run := apibench.ClosedLoop(ctx, 8, time.Hour, func(_ context.Context, client int) (int, error) {
		n := sends.Add(1)
		if n >= 1000 {
			cancel()
		}
		switch n % 10 {
		case 0:
			return 0, failure
		case 1:
			return http.StatusTooManyRequests, nil
		default:
			return http.StatusCreated, nil
		}
	})
	answered := run.Count(http.StatusCreated) + run.Count(http.StatusTooManyRequests)
	require.Equal(t, int(sends.Load()), answered+run.Failures, "every send is an answer or a failure")
	require.Len(t, run.Latencies, answered)
	require.Positive(t, run.Failures)
	require.ErrorIs(t, run.FirstFailure, failure)

	report := apibench.NewPostReport("test", 1, 8, run, http.StatusCreated)
	require.Equal(t, int(sends.Load()), report.Requests)
	require.Equal(t, run.Count(http.StatusCreated), report.Created)
	require.Equal(t, report.Requests-report.Created, report.Errors)
	require.Equal(t, run.Failures, report.Statuses["no answer"])
}

func TestSequentialStopsAtTheFirstUnexpectedStatus(t *testing.T) {
	t.Parallel()
	statuses := []int{200, 200, 200, 501, 200}
	i := 0
	latencies, status, err := apibench.Sequential(t.Context(), 10, time.Hour, http.StatusOK, func(context.Context) (int, error) {
		i++
		return statuses[i-1], nil
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusNotImplemented, status)
	require.Len(t, latencies, 3)

	latencies, status, err = apibench.Sequential(t.Context(), 2, time.Hour, http.StatusOK, func(context.Context) (int, error) { return 200, nil })
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, latencies, 2, "stops after n")
}

func TestReportPrintsATableAndWritesJSON(t *testing.T) {
	t.Parallel()
	r := apibench.Report{
		Machine: apibench.ThisMachine("17.2"),
		Post: []apibench.PostReport{{Name: "one project", Projects: 1, Clients: 64, DurationSeconds: 10, Created: 1234,
			HooksPerSecond: 123.4, Statuses: map[string]int{"201": 1234}}},
		Load: apibench.LoadReport{HooksPerProject: 1_000_000, Projects: 2},
		List: []apibench.ListReport{
			apibench.NewListReport("first page, limit 100", []time.Duration{time.Millisecond, 3 * time.Millisecond}),
			{Name: "page 51", Status: 501, Note: "HTTP 501: not implemented"},
		},
	}
	var out bytes.Buffer
	require.NoError(t, r.Print(&out))
	require.Contains(t, out.String(), "POST /v1/hooks")
	require.Contains(t, out.String(), "not available: HTTP 501")
	require.Positive(t, r.Machine.CPUs)

	path := filepath.Join(t.TempDir(), "nested", "api.json")
	require.NoError(t, r.WriteJSON(path))
	var back apibench.Report
	require.NoError(t, json.Unmarshal(readFile(t, path), &back))
	require.Equal(t, r, back)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

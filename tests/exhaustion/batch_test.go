package exhaustion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConcurrentMaximumBatchesKeepGatewayMemoryBounded sends 16 batches of
// 1,000 hooks of 16 KB (15.3 MiB each, the batch body's limit) at once,
// every other one refused for its last hook, to a gateway with the Go
// memory limit a container of 256 MiB gives it. The gateway must answer
// each with 201, 400 (the invalid ones) or 503 with Retry-After (over its
// budget of request bytes in flight), keep its peak RSS under the
// container's limit, and store exactly the hooks of the batches it answered
// 201. Without a budget, 16 such batches at once took it to 1.8 GiB.
func TestConcurrentMaximumBatchesKeepGatewayMemoryBounded(t *testing.T) {
	useBinary(t)
	t.Parallel()
	const (
		batches   = 16
		hooks     = 1000
		dataBytes = 16_000
		container = 256 << 10 // kB
	)
	// The soft limit the gateway sets itself in a container of 256 MiB
	// (package gcdefault): 80 % of it.
	g := startGateway(t, 0, map[string]string{"GOMEMLIMIT": "204MiB"})
	valid, invalid := batchBody(hooks, dataBytes, false), batchBody(hooks, dataBytes, true)
	t.Logf("batch body: %.1f MiB", float64(len(valid))/(1<<20))

	reset := g.resetPeak()
	before := g.status(t, "VmHWM")
	statuses := make([]int, batches)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range batches {
		body := valid
		if i%2 == 1 {
			body = invalid
		}
		wg.Go(func() { statuses[i] = postBatch(t, g, body) })
	}
	wg.Wait()
	peak := g.status(t, "VmHWM")
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	t.Logf("gateway peak RSS (VmHWM): %d MiB before (peak reset: %v), %d MiB with %d batches at once (%s); answers %v",
		before>>10, reset, peak>>10, batches, time.Since(start).Round(time.Millisecond), counts)

	for i, s := range statuses {
		if i%2 == 1 {
			require.Contains(t, []int{http.StatusBadRequest, http.StatusServiceUnavailable}, s, "invalid batch %d", i)
		} else {
			require.Contains(t, []int{http.StatusCreated, http.StatusServiceUnavailable}, s, "valid batch %d", i)
		}
	}
	require.Equal(t, counts[http.StatusCreated]*hooks, storedHooks(t, g), "hooks stored against batches answered 201")
	require.Less(t, peak, container, "the gateway's peak RSS with %d maximum batches at once", batches)
}

// batchBody is a POST /v1/hooks/batch body of n hooks with data of about
// size bytes; with bad, the last hook has no path.
func batchBody(n, size int, bad bool) []byte {
	var b bytes.Buffer
	blob := strings.Repeat("x", size)
	b.WriteString(`{"hooks":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		path := `"path":"/big",`
		if bad && i == n-1 {
			path = ""
		}
		fmt.Fprintf(&b, `{%s"postAt":"2099-01-01T00:00:00Z","data":{"i":%d,"blob":"%s"}}`, path, i, blob)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// postBatch posts body and returns the status; a 503 must carry
// Retry-After.
func postBatch(t *testing.T, g *gatewayProcess, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.base+"/v1/hooks/batch", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-API-Key", g.apiKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: 120 * time.Second}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusServiceUnavailable {
		secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
		require.NoError(t, err, "503 without a Retry-After: %s", raw)
		require.Positive(t, secs)
	}
	return res.StatusCode
}

// storedHooks counts the project's hooks, as the API's list reports them.
func storedHooks(t *testing.T, g *gatewayProcess) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.base+"/v1/hooks?limit=1", nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", g.apiKey)
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "GET /v1/hooks: %s", raw)
	var out struct {
		Meta struct {
			TotalItems int `json:"totalItems"`
		} `json:"meta"`
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Meta.TotalItems
}

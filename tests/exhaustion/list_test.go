package exhaustion

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 14, item 3: 200 hooks of ~1 MiB data and three concurrent
// GET /v1/hooks?limit=1000 took the gateway from 122 MB to 2.87 GB (each
// response 211 MB, built whole). Pages now end at a 4 MiB byte budget and
// are written hook by hook, so the gateway's peak RSS (VmHWM of its
// process) must stay under 300 MiB while three clients list at once; each
// first page holds the hooks that fit, and its cursor leads to the next
// ones. (Walking every page to the end is tested in services/gateway/app,
// on fewer hooks.) Then 64 clients read a first page at once: the pages
// share the gateway's budget of bytes in flight
// (SUNDIAL_GATEWAY_BODY_BYTES_IN_FLIGHT), so they shrink or are refused
// with 503, and the peak stays under the gateway's container limit (286
// MiB without the budget).
func TestListingLargeHooksKeepsGatewayMemoryBounded(t *testing.T) {
	useBinary(t)
	t.Parallel()
	const (
		hooks    = 200
		clients  = 3
		maxPeak  = 300 << 10 // kB
		dataSize = 1_000_000
		budget   = 4 << 20 // hooklist.MaxPageBytes
	)
	// The soft limit the gateway sets itself in its container (256 Mi):
	// 80 % of it.
	g := startGateway(t, 0, map[string]string{"GOMEMLIMIT": "204MiB"})
	client := &http.Client{Timeout: 120 * time.Second}
	body := `{"path":"/big","postAt":"2099-01-01T00:00:00Z","data":{"blob":"` + strings.Repeat("x", dataSize) + `"}}`
	start := time.Now()
	createAll(t, client, g, hooks, body)
	t.Logf("%d hooks of %d bytes created in %s", hooks, len(body), time.Since(start).Round(time.Millisecond))

	start = time.Now()
	reset := g.resetPeak()
	before := g.status(t, "VmHWM")
	type pages struct {
		bytes []int64
		ids   [][]string
		err   error
	}
	got := make([]pages, clients)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			p := &got[i]
			p.err = walkPages(client, g, "limit=1000", 2, func(raw int64, ids []string) {
				p.bytes = append(p.bytes, raw)
				p.ids = append(p.ids, ids)
			})
		})
	}
	wg.Wait()
	peak := g.status(t, "VmHWM")
	t.Logf("gateway peak RSS (VmHWM): %d MiB before the listing (peak reset: %v), %d MiB while %d clients listed at once (%s); bound %d MiB",
		before>>10, reset, peak>>10, clients, time.Since(start).Round(time.Millisecond), maxPeak>>10)
	for i, p := range got {
		require.NoError(t, p.err, "client %d", i)
		held := make([]int, len(p.ids))
		for n, ids := range p.ids {
			held[n] = len(ids)
		}
		t.Logf("client %d: pages of %v bytes holding %v hooks", i, p.bytes, held)
		require.Len(t, p.ids, 2, "client %d: the first page has a cursor", i)
		seen := map[string]bool{}
		for n, ids := range p.ids {
			require.NotEmpty(t, ids)
			require.Less(t, p.bytes[n], int64(budget+64<<10), "client %d page %d: within the byte budget", i, n+1)
			for _, id := range ids {
				require.False(t, seen[id], "client %d: hook %s on both pages", i, id)
				seen[id] = true
			}
		}
	}
	require.Less(t, peak, maxPeak, "the gateway's peak RSS while three clients list 200 hooks of 1 MB")

	// Many readers at once: their pages share the gateway's budget of
	// bytes in flight, so they shrink, or are refused with 503 when it is
	// spent, and the gateway stays in its container.
	const readers, container = 64, 256 << 10 // kB
	reset = g.resetPeak()
	statuses := make([]int, readers)
	for i := range statuses {
		wg.Go(func() { statuses[i] = firstPage(t, client, g, "limit=1000") })
	}
	wg.Wait()
	peak = g.status(t, "VmHWM")
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	t.Logf("gateway peak RSS (VmHWM) with %d readers at once: %d MiB (peak reset: %v); answers %v", readers, peak>>10, reset, counts)
	require.Equal(t, readers, counts[http.StatusOK]+counts[http.StatusServiceUnavailable], "only pages and 503s")
	require.Positive(t, counts[http.StatusOK])
	require.Less(t, peak, container, "the gateway's peak RSS while %d clients list 200 hooks of 1 MB", readers)
}

// firstPage reads the first page of query and returns its status; a 503
// must carry Retry-After.
func firstPage(t *testing.T, client *http.Client, g *gatewayProcess, query string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.base+"/v1/hooks?"+query, nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", g.apiKey)
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	require.NoError(t, err)
	if res.StatusCode == http.StatusServiceUnavailable {
		require.NotEmpty(t, res.Header.Get("Retry-After"))
	}
	return res.StatusCode
}

// createAll creates n hooks with body, 4 at a time.
func createAll(t *testing.T, client *http.Client, g *gatewayProcess, n int, body string) {
	t.Helper()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range 4 {
		wg.Go(func() {
			for range next {
				if err := create(client, g, body); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, errs)
}

func create(client *http.Client, g *gatewayProcess, body string) error {
	req, err := http.NewRequest(http.MethodPost, g.base+"/v1/hooks", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", g.apiKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("create: %d %s", res.StatusCode, raw)
	}
	return nil
}

// walkPages lists up to max pages of query, calling page with each page's
// size in bytes and the ids on it.
func walkPages(client *http.Client, g *gatewayProcess, query string, max int, page func(bytes int64, ids []string)) error {
	cursor := ""
	for range max {
		q := query
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		req, err := http.NewRequest(http.MethodGet, g.base+"/v1/hooks?"+q, nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-API-Key", g.apiKey)
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		var p struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			Meta struct {
				NextCursor *string `json:"nextCursor"`
			} `json:"meta"`
		}
		counted := &countingReader{r: res.Body}
		err = json.NewDecoder(counted).Decode(&p)
		_, _ = io.Copy(io.Discard, counted)
		_ = res.Body.Close()
		if err != nil {
			return fmt.Errorf("page: %d: %w", res.StatusCode, err)
		}
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("page: status %d", res.StatusCode)
		}
		ids := make([]string, len(p.Data))
		for i, h := range p.Data {
			ids[i] = h.ID
		}
		page(counted.n, ids)
		if p.Meta.NextCursor == nil {
			return nil
		}
		cursor = *p.Meta.NextCursor
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

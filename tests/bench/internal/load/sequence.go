package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// Sequence is a sequence as POST /v1/sequences answered.
type Sequence struct {
	ID        uuid.UUID  `json:"id"`
	Status    string     `json:"status"`
	NextRunAt *time.Time `json:"nextRunAt"`
}

// CreateSequences creates n sequences through POST /v1/sequences (clients
// at once), body(i) being the i-th's JSON body; 429 answers and transport
// errors are retried as for hooks.
func (c *Client) CreateSequences(ctx context.Context, n, clients int, body func(i int) []byte) ([]Sequence, Created, error) {
	out := make([]Sequence, n)
	latencies := make([]time.Duration, n)
	var next, retried atomic.Int64
	var firstErr error
	var errOnce sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				seq, tries, err := c.createSequence(ctx, body(i))
				latencies[i] = time.Since(t0)
				retried.Add(int64(tries - 1))
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("create sequence %d: %w", i, err); cancel() })
					return
				}
				out[i] = seq
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return nil, Created{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, Created{}, err
	}
	return out, Created{
		Count: n, Seconds: elapsed.Seconds(), PerSecond: stats.PerSecond(n, elapsed),
		Latency: stats.Summarize(latencies), Retried: int(retried.Load()), Finished: time.Now(),
	}, nil
}

// createSequence posts one sequence, retrying 429 answers and transport
// errors up to maxTries; it returns the sequence and the tries it took.
func (c *Client) createSequence(ctx context.Context, body []byte) (Sequence, int, error) {
	for try := 1; ; try++ {
		status, raw, err := c.Do(ctx, http.MethodPost, "/v1/sequences", body)
		if err == nil && status == http.StatusCreated {
			var out struct{ Data Sequence }
			if err := json.Unmarshal(raw, &out); err != nil {
				return Sequence{}, try, fmt.Errorf("POST /v1/sequences answer: %w", err)
			}
			return out.Data, try, nil
		}
		if err == nil && status != http.StatusTooManyRequests {
			return Sequence{}, try, fmt.Errorf("POST /v1/sequences: %d: %s", status, raw)
		}
		if try >= maxTries || ctx.Err() != nil {
			return Sequence{}, try, fmt.Errorf("after %d tries: status %d, %v", try, status, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Do sends one request to the API as the project and returns the answer's
// status and body (at most 1 MiB).
func (c *Client) Do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-API-Key", c.APIKey)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, raw, nil
}

// Timed is a run of requests one after another.
type Timed struct {
	Requests int           `json:"requests"`
	Latency  stats.Summary `json:"latency"`
	// Errors counts answers other than 200 by status ("transport" for no
	// answer); their latencies are left out.
	Errors map[string]int `json:"errors,omitempty"`
}

// Sequential sends n requests one after another (the next when the last
// is answered and read) and times the answers 200, from sending to the end
// of the body. check, when set, is asked about each body 200.
func (c *Client) Sequential(ctx context.Context, n int, method, path string, body []byte, check func([]byte) error) (Timed, error) {
	return sequential(ctx, n, method+" "+path, func() (int, []byte, error) { return c.Do(ctx, method, path, body) }, check)
}

// sequential times n calls of do one after another, as Sequential says;
// what names the request in errors.
func sequential(ctx context.Context, n int, what string, do func() (int, []byte, error), check func([]byte) error) (Timed, error) {
	out := Timed{Requests: n, Errors: map[string]int{}}
	latencies := make([]time.Duration, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		t0 := time.Now()
		status, raw, err := do()
		d := time.Since(t0)
		switch {
		case err != nil:
			out.Errors["transport"]++
		case status != http.StatusOK:
			out.Errors[strconv.Itoa(status)]++
		default:
			if check != nil {
				if err := check(raw); err != nil {
					return out, fmt.Errorf("%s: %w", what, err)
				}
			}
			latencies = append(latencies, d)
		}
	}
	out.Latency = stats.Summarize(latencies)
	return out, nil
}

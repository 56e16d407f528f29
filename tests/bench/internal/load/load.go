// Package load schedules the benchmark's hooks through the public API:
// POST /v1/hooks from many concurrent clients, each hook at its own postAt.
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

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// maxTries bounds the attempts of one create that keeps getting 429 or a
// transport error.
const maxTries = 20

// Client creates hooks as one project.
type Client struct {
	BaseURL string
	APIKey  string
	HTTP    *http.Client
}

// NewClient returns a Client whose connection pool fits clients at once.
func NewClient(baseURL, apiKey string, clients int) *Client {
	tr := &http.Transport{MaxIdleConns: clients * 2, MaxIdleConnsPerHost: clients * 2, IdleConnTimeout: time.Minute}
	return &Client{BaseURL: baseURL, APIKey: apiKey, HTTP: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Created sums up a creation run.
type Created struct {
	Count     int           `json:"count"`
	Seconds   float64       `json:"seconds"`
	PerSecond float64       `json:"perSecond"`
	Latency   stats.Summary `json:"latency"`
	// Retried counts answers 429 and transport errors that were retried.
	Retried int `json:"retried"`
	// Errors counts the answers that were not 201 by status, in a closed
	// loop (Loop), which retries nothing.
	Errors map[string]int `json:"errors,omitempty"`
	// Finished is when the last create was answered.
	Finished time.Time `json:"finished"`
}

// Spec is one hook to create.
type Spec struct {
	PostAt time.Time
	Path   string
	// Retries, when above 0, is the hook's own retry policy
	// (retryOverride): that many retries after the first attempt, each
	// RetryDelay after the attempt before failed (fixed, no jitter), so
	// that when a retry is due is known to the millisecond.
	Retries    int
	RetryDelay time.Duration
	// OrderingKey, when set, is the hook's orderingKey: the project's hooks
	// of one key are delivered one at a time, in order of postAt.
	OrderingKey string
	// APIKey, when set, is the key of the project that creates the hook,
	// instead of the client's own.
	APIKey string
}

// Specs are one Spec per postAt, all at path, with the project's retries.
func Specs(postAts []time.Time, path string) []Spec {
	out := make([]Spec, len(postAts))
	for i, at := range postAts {
		out[i] = Spec{PostAt: at, Path: path}
	}
	return out
}

// CreateAll schedules one hook per postAt (in that order, clients at once)
// at path, and returns them with the postAt the API stored.
func (c *Client) CreateAll(ctx context.Context, postAts []time.Time, clients int, path string) ([]check.Hook, Created, error) {
	return c.CreateSpecs(ctx, Specs(postAts, path), clients)
}

// CreateSpecs schedules one hook per spec (in that order, clients at
// once), and returns them with the postAt the API stored.
func (c *Client) CreateSpecs(ctx context.Context, specs []Spec, clients int) ([]check.Hook, Created, error) {
	hooks := make([]check.Hook, len(specs))
	latencies := make([]time.Duration, len(specs))
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
				if i >= len(specs) {
					return
				}
				t0 := time.Now()
				h, tries, err := c.create(ctx, i, specs[i])
				latencies[i] = time.Since(t0)
				retried.Add(int64(tries - 1))
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				hooks[i] = h
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
	return hooks, Created{
		Count:     len(hooks),
		Seconds:   elapsed.Seconds(),
		PerSecond: stats.PerSecond(len(hooks), elapsed),
		Latency:   stats.Summarize(latencies),
		Retried:   int(retried.Load()),
		Finished:  time.Now(),
	}, nil
}

type createRequest struct {
	Path          string         `json:"path"`
	PostAt        string         `json:"postAt"`
	Data          map[string]int `json:"data"`
	RetryOverride *retryOverride `json:"retryOverride,omitempty"`
	OrderingKey   string         `json:"orderingKey,omitempty"`
}

// retryOverride is the API's RetryOverride with a fixed delay and no
// jitter.
type retryOverride struct {
	MinRetries int    `json:"minRetries"`
	DelaySecs  int    `json:"delaySecs"`
	Strategy   string `json:"strategy"`
	Jitter     bool   `json:"jitter"`
}

type createResponse struct {
	Data struct {
		ID     uuid.UUID `json:"id"`
		PostAt time.Time `json:"postAt"`
	} `json:"data"`
}

// create posts one hook, retrying 429 answers (after Retry-After, capped)
// and transport errors; it returns the hook and the tries it took.
func (c *Client) create(ctx context.Context, i int, spec Spec) (check.Hook, int, error) {
	req := createRequest{Path: spec.Path, PostAt: spec.PostAt.UTC().Format(time.RFC3339Nano), Data: map[string]int{"n": i}, OrderingKey: spec.OrderingKey}
	if spec.Retries > 0 {
		req.RetryOverride = &retryOverride{MinRetries: spec.Retries, DelaySecs: int(spec.RetryDelay / time.Second), Strategy: "fixed"}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return check.Hook{}, 1, err
	}
	apiKey := c.APIKey
	if spec.APIKey != "" {
		apiKey = spec.APIKey
	}
	for try := 1; ; try++ {
		h, wait, err := c.post(ctx, apiKey, body)
		if err == nil && wait == 0 {
			return h, try, nil
		}
		if try >= maxTries || ctx.Err() != nil {
			return check.Hook{}, try, fmt.Errorf("create hook %d after %d tries: %w", i, try, err)
		}
		if wait == 0 {
			wait = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// post sends one create as the project of apiKey; a 429 gives the wait it
// asks for and an error describing it.
func (c *Client) post(ctx context.Context, apiKey string, body []byte) (check.Hook, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/v1/hooks", bytes.NewReader(body))
	if err != nil {
		return check.Hook{}, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", apiKey)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return check.Hook{}, 0, err
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if err != nil {
		return check.Hook{}, 0, err
	}
	switch resp.StatusCode {
	case http.StatusCreated:
	case http.StatusTooManyRequests:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return check.Hook{}, min(max(time.Duration(secs)*time.Second, 50*time.Millisecond), 2*time.Second),
			fmt.Errorf("429: %s", raw)
	default:
		return check.Hook{}, 0, fmt.Errorf("POST /v1/hooks: %s: %s", resp.Status, raw)
	}
	var out createResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return check.Hook{}, 0, fmt.Errorf("POST /v1/hooks answer: %w", err)
	}
	return check.Hook{ID: out.Data.ID, PostAt: out.Data.PostAt}, 0, nil
}

// Loop runs a closed loop for d: clients at once, each posting its next
// hook (at postAt, path) as soon as its previous one is answered, with no
// retry, so that the figures are the gateway's own. Requests under way at
// the end are waited for and counted. Latency is that of the answers 201;
// Errors counts the others by status ("transport" for no answer).
func (c *Client) Loop(ctx context.Context, clients int, d time.Duration, postAt time.Time, path string) (Created, error) {
	body, err := json.Marshal(createRequest{Path: path, PostAt: postAt.UTC().Format(time.RFC3339Nano), Data: map[string]int{"n": 0}})
	if err != nil {
		return Created{}, err
	}
	l, err := closedLoop(ctx, clients, d, func() int { return c.postStatus(ctx, "/v1/hooks", body) })
	if err != nil {
		return Created{}, err
	}
	return l.created(1), nil
}

// looped is what a closed loop saw: the latency of each answer 201, the
// other answers by status, and how long it ran.
type looped struct {
	latencies []time.Duration
	errors    map[string]int
	elapsed   time.Duration
}

// created sums up a loop whose every answer 201 created perAnswer hooks.
func (l looped) created(perAnswer int) Created {
	return Created{
		Count:     len(l.latencies) * perAnswer,
		Seconds:   l.elapsed.Seconds(),
		PerSecond: stats.PerSecond(len(l.latencies)*perAnswer, l.elapsed),
		Latency:   stats.Summarize(l.latencies),
		Errors:    l.errors,
		Finished:  time.Now(),
	}
}

// closedLoop runs post from clients goroutines at once, each calling it
// again as soon as it returns, for d; requests under way at the end are
// waited for and counted.
func closedLoop(ctx context.Context, clients int, d time.Duration, post func() int) (looped, error) {
	type tally struct {
		latencies []time.Duration
		errors    map[string]int
	}
	tallies := make([]tally, clients)
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for w := range clients {
		tallies[w].errors = map[string]int{}
		wg.Go(func() {
			t := &tallies[w]
			for ctx.Err() == nil && time.Now().Before(end) {
				t0 := time.Now()
				status := post()
				if status == http.StatusCreated {
					t.latencies = append(t.latencies, time.Since(t0))
					continue
				}
				t.errors[statusName(status)]++
			}
		})
	}
	wg.Wait()
	out := looped{elapsed: time.Since(start), errors: map[string]int{}}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	for _, t := range tallies {
		out.latencies = append(out.latencies, t.latencies...)
		for k, v := range t.errors {
			out.errors[k] += v
		}
	}
	return out, nil
}

// postStatus sends one create and returns the answer's status, 0 for no
// answer.
func (c *Client) postStatus(ctx context.Context, path string, body []byte) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", c.APIKey)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0
	}
	// Read the body so the connection is reused.
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func statusName(status int) string {
	if status == 0 {
		return "transport"
	}
	return strconv.Itoa(status)
}

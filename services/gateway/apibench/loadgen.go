package apibench

import (
	"context"
	"sync"
	"time"
)

// Send sends one request as client and returns the response's status, or
// an error when no response came (a transport failure).
type Send func(ctx context.Context, client int) (status int, err error)

// Run is the outcome of a closed-loop run.
type Run struct {
	// Elapsed runs from the start to the last answer: requests in flight
	// at the deadline are waited for, not cut off, so every request sent
	// is counted.
	Elapsed time.Duration
	// Latencies of the answered requests, whatever their status.
	Latencies []time.Duration
	// Statuses counts the answers by HTTP status.
	Statuses map[int]int
	// Failures counts requests that got no answer; FirstFailure is the
	// first of their errors.
	Failures     int
	FirstFailure error
}

// Count is how many requests got an answer with status.
func (r Run) Count(status int) int { return r.Statuses[status] }

// ClosedLoop runs clients loops, each sending a request, waiting for its
// answer and sending the next, until duration has passed or ctx is done.
func ClosedLoop(ctx context.Context, clients int, duration time.Duration, send Send) Run {
	deadline := time.Now().Add(duration)
	results := make([]Run, clients)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() { results[c] = loop(ctx, c, deadline, send) })
	}
	wg.Wait()
	total := Run{Elapsed: time.Since(start), Statuses: map[int]int{}}
	for _, r := range results {
		total.Latencies = append(total.Latencies, r.Latencies...)
		for status, n := range r.Statuses {
			total.Statuses[status] += n
		}
		total.Failures += r.Failures
		if total.FirstFailure == nil {
			total.FirstFailure = r.FirstFailure
		}
	}
	return total
}

// loop is one client's share of a run.
func loop(ctx context.Context, client int, deadline time.Time, send Send) Run {
	r := Run{Statuses: map[int]int{}}
	for ctx.Err() == nil && time.Now().Before(deadline) {
		t0 := time.Now()
		status, err := send(ctx, client)
		took := time.Since(t0)
		if err != nil {
			r.Failures++
			if r.FirstFailure == nil {
				r.FirstFailure = err
			}
			continue
		}
		r.Latencies = append(r.Latencies, took)
		r.Statuses[status]++
	}
	return r
}

// Sequential sends up to n requests one after the other (a single client),
// for at most duration, and returns their latencies. It stops at the first
// answer whose status is not want, and returns that status.
func Sequential(ctx context.Context, n int, duration time.Duration, want int, send func(ctx context.Context) (int, error)) ([]time.Duration, int, error) {
	deadline := time.Now().Add(duration)
	latencies := make([]time.Duration, 0, n)
	for len(latencies) < n && time.Now().Before(deadline) {
		t0 := time.Now()
		status, err := send(ctx)
		took := time.Since(t0)
		if err != nil {
			return latencies, 0, err
		}
		if status != want {
			return latencies, status, nil
		}
		latencies = append(latencies, took)
	}
	return latencies, want, nil
}

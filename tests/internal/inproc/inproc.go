// Package inproc runs Sundial's services inside a test's process and stops
// them, newest first, when the test is done with them. Tests only.
package inproc

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// Group is the services a test started; the zero value is ready to use.
type Group struct {
	mu    sync.Mutex
	stops []func()
}

// Go runs run (a service's Run) on a context derived from ctx until Stop,
// and fails t when the service stops with an error other than its
// cancellation.
func (g *Group) Go(ctx context.Context, t testing.TB, name string, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stops = append(g.stops, func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s stopped with error: %v", name, err)
		}
	})
}

// Stop stops the services in reverse order of their start and waits for
// each; a service started afterwards is stopped by the next Stop.
func (g *Group) Stop() {
	g.mu.Lock()
	stops := g.stops
	g.stops = nil
	g.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

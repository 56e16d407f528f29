package bus

import "sync"

// Pool runs functions on goroutines that are reused from one function to
// the next: a goroutine per function would grow a fresh stack each time
// (TLS, protobuf and pgx need deep ones), and in a burst that growth was a
// visible share of the CPU. The pool starts empty, grows by one goroutine
// whenever a function finds none idle, never beyond its size, and its
// goroutines end at Close.
type Pool struct {
	size int
	jobs chan func()
	quit chan struct{}

	mu     sync.Mutex
	pooled int
}

// NewPool returns a pool of at most size goroutines (at least 1).
func NewPool(size int) *Pool {
	return &Pool{size: max(size, 1), jobs: make(chan func()), quit: make(chan struct{})}
}

// Go runs fn on an idle goroutine of the pool, or on a new one while the
// pool is below its size; otherwise it waits until a goroutine is free. So
// at most size functions run at once. Go must not be called after Close.
func (p *Pool) Go(fn func()) {
	select {
	case p.jobs <- fn:
		return
	default:
	}
	p.mu.Lock()
	grow := p.pooled < p.size
	if grow {
		p.pooled++
	}
	p.mu.Unlock()
	if grow {
		go p.serve(fn)
		return
	}
	p.jobs <- fn
}

// serve is one goroutine of the pool: it runs fn, then each function handed
// to it, until Close.
func (p *Pool) serve(fn func()) {
	for {
		fn()
		select {
		case fn = <-p.jobs:
		case <-p.quit:
			return
		}
	}
}

// Close ends the pool's goroutines, each once its function has returned.
func (p *Pool) Close() {
	close(p.quit)
}

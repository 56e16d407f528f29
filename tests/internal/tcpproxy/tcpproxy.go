// Package tcpproxy is a TCP proxy for tests that cut a network: it forwards
// connections to the first backend that accepts one, and can freeze (stop
// moving bytes and hold new connections unanswered, as a cable pulled
// out does) and thaw.
package tcpproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections from its address to backends.
type Proxy struct {
	ln       net.Listener
	backends []string

	mu     sync.Mutex
	frozen chan struct{} // closed when thawed; nil while not frozen
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	closed bool
}

// New listens on a free local port and forwards to backends (host:port),
// trying them in order for each connection. The proxy closes with the test.
func New(t testing.TB, backends ...string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("tcpproxy: listen: %v", err)
	}
	p := &Proxy{ln: ln, backends: backends, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Freeze stops every byte in both directions on every connection, open or
// new, until Thaw: nothing is closed, so each side sees a silent peer.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen == nil {
		p.frozen = make(chan struct{})
	}
}

// Thaw lets bytes move again.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
}

// Close stops accepting and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// gate waits while the proxy is frozen; false once it is closed.
func (p *Proxy) gate() bool {
	p.mu.Lock()
	frozen, closed := p.frozen, p.closed
	p.mu.Unlock()
	if frozen != nil {
		<-frozen
	}
	return !closed
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			return
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve connects client to the first backend that answers; a frozen proxy
// holds the client unanswered until it thaws.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	if !p.gate() {
		return
	}
	backend, err := p.dial()
	if err != nil || !p.track(backend) {
		return
	}
	defer p.untrack(backend)
	done := make(chan struct{}, 2)
	go func() { p.pipe(backend, client); done <- struct{}{} }()
	go func() { p.pipe(client, backend); done <- struct{}{} }()
	<-done
	// One direction ended: end both, so the other copy returns.
	_ = client.Close()
	_ = backend.Close()
	<-done
}

func (p *Proxy) dial() (net.Conn, error) {
	var errs []error
	for _, b := range p.backends {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", b)
		cancel()
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// pipe copies src to dst a chunk at a time, each chunk waiting while the
// proxy is frozen.
func (p *Proxy) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

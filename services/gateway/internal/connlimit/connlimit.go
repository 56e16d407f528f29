// Package connlimit caps the connections an HTTP server holds open without
// locking newcomers out. A listener counts the connections it hands out;
// the server's ConnState hook tells it which of them are idle (a keep-alive
// connection between requests, or a new one that has not sent a request
// yet). At the cap, accepting a new connection first closes the one idle
// the longest: a client holding thousands of idle sockets loses them, one
// per newcomer, instead of exhausting the process's file descriptors and
// timing every other client out. Only when every connection is busy with a
// request is a newcomer closed at once.
//
// A connection taken over by its handler (a WebSocket upgrade hijacks it)
// stays counted, as busy, until it is closed: sockets and requests share
// the one budget of file descriptors.
//
// Closing an idle keep-alive connection is what HTTP allows a server to do
// at any time; a request racing the close fails like one racing an idle
// timeout, which clients retry.
package connlimit

import (
	"container/list"
	"net"
	"net/http"
	"sync"
)

// Limiter is a net.Listener that caps open connections; Track must be the
// http.Server's ConnState.
type Limiter struct {
	net.Listener
	max int

	mu      sync.Mutex
	open    int
	conns   map[net.Conn]*list.Element // every open connection; nil element while busy
	idle    *list.List                 // of net.Conn, idle the longest first
	evicted uint64
	refused uint64
}

// New wraps l so that at most max connections are open at once.
func New(l net.Listener, max int) *Limiter {
	return &Limiter{Listener: l, max: max, conns: map[net.Conn]*list.Element{}, idle: list.New()}
}

// Accept returns the next connection. At the cap it closes the connection
// idle the longest to make room, or, when none is idle, the new one, and
// waits for the next.
func (l *Limiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		counted := &conn{Conn: c, l: l}
		if l.admit(counted) {
			return counted, nil
		}
		_ = c.Close()
	}
}

// conn is an accepted connection: closing it counts it out, which is how a
// hijacked one, whose closing the server does not report, leaves the count.
type conn struct {
	net.Conn
	l *Limiter
}

func (c *conn) Close() error {
	c.l.forget(c)
	return c.Conn.Close()
}

// CloseWrite half-closes the connection when it can, as net/http does to a
// *net.TCPConn before closing it so that the client reads the last answer.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// admit counts c in, making room if needed; false when every connection
// is busy.
func (l *Limiter) admit(c net.Conn) bool {
	l.mu.Lock()
	if l.open < l.max {
		l.open++
		l.conns[c] = nil
		l.mu.Unlock()
		return true
	}
	oldest := l.idle.Front()
	if oldest == nil {
		l.refused++
		l.mu.Unlock()
		return false
	}
	victim := oldest.Value.(net.Conn)
	l.idle.Remove(oldest)
	delete(l.conns, victim)
	// The victim's slot passes to c: the server's StateClosed for the
	// victim finds it gone and does not count it out again.
	l.conns[c] = nil
	l.evicted++
	l.mu.Unlock()
	_ = victim.Close()
	return true
}

// Track is the http.Server's ConnState hook.
func (l *Limiter) Track(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.conns[c]
	if !ok {
		return // evicted, or not from this listener
	}
	switch s {
	case http.StateNew, http.StateIdle:
		if el != nil {
			l.idle.MoveToBack(el)
		} else {
			l.conns[c] = l.idle.PushBack(c)
		}
	case http.StateActive, http.StateHijacked:
		// A hijacked connection is busy until its new owner closes it.
		if el != nil {
			l.idle.Remove(el)
			l.conns[c] = nil
		}
	case http.StateClosed:
		l.forgetLocked(c)
	}
}

// forget counts c out, once, whichever of its closing and the server's
// StateClosed comes first; an evicted connection is already out.
func (l *Limiter) forget(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetLocked(c)
}

func (l *Limiter) forgetLocked(c net.Conn) {
	el, ok := l.conns[c]
	if !ok {
		return
	}
	if el != nil {
		l.idle.Remove(el)
	}
	delete(l.conns, c)
	l.open--
}

// Stats are counts since the start.
type Stats struct {
	Open    int
	Idle    int
	Evicted uint64 // idle connections closed to make room
	Refused uint64 // new connections closed because every one was busy
}

// Stats reports the current counts.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Open: l.open, Idle: l.idle.Len(), Evicted: l.evicted, Refused: l.refused}
}

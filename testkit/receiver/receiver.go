// Package receiver is the HTTPS endpoint that Sundial's tests, benchmarks
// and local demo deliver to: a server on 127.0.0.1 (any free port) whose
// certificate a throwaway CA signed. One CA serves the whole process, so a
// single CA file (SUNDIAL_DELIVERY_CA_FILE) trusts every receiver a test
// starts. What a receiver does with a request (record it, hold it, answer
// with a status, log it) is the handler its user gives.
package receiver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"
)

// Options for Start.
type Options struct {
	// HTTP2 offers HTTP/2 (ALPN h2) besides HTTP/1.1.
	HTTP2 bool
	// Localhost makes the certificate valid for the name localhost too
	// (the local demo, where a person may type it); tests leave it out to
	// see a name check fail.
	Localhost bool
	// ErrorLog gets the server's errors (refused handshakes among them);
	// nil discards them: connection errors are the client's to report.
	ErrorLog *log.Logger
	// ConnState, if set, is called as connections change state.
	ConnState func(net.Conn, http.ConnState)
	// Addr is the address to listen on; empty: a free port of 127.0.0.1.
	Addr string
}

// Receiver is a running HTTPS endpoint.
type Receiver struct {
	srv  *http.Server
	addr string
	// served is closed when serving ended, with serveErr set.
	served   chan struct{}
	serveErr error
}

// Start serves handler over HTTPS on a free port of 127.0.0.1.
func Start(handler http.Handler, opts Options) (*Receiver, error) {
	leaf, err := Certificate(opts.Localhost)
	if err != nil {
		return nil, err
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("receiver listen: %w", err)
	}
	if opts.ErrorLog == nil {
		opts.ErrorLog = log.New(io.Discard, "", 0)
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(opts.HTTP2)
	r := &Receiver{addr: ln.Addr().String(), served: make(chan struct{})}
	r.srv = &http.Server{
		Handler:           handler,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12},
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          opts.ErrorLog,
		ConnState:         opts.ConnState,
	}
	go func() {
		defer close(r.served)
		if err := r.srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
			r.serveErr = err
		}
	}()
	return r, nil
}

// Addr is the receiver's host:port: a project's domain.
func (r *Receiver) Addr() string { return r.addr }

// URL is https://Addr.
func (r *Receiver) URL() string { return "https://" + r.addr }

// Shutdown stops accepting requests and waits for those in progress, until
// ctx ends.
func (r *Receiver) Shutdown(ctx context.Context) error {
	err := r.srv.Shutdown(ctx)
	<-r.served
	return errors.Join(err, r.serveErr)
}

// Close stops the receiver at once, closing its connections.
// Calling it again, or Shutdown after it, does no harm.
func (r *Receiver) Close() error {
	err := r.srv.Close()
	<-r.served
	return errors.Join(err, r.serveErr)
}

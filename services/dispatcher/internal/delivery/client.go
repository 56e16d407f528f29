// Package delivery sends one hook to its receiver over HTTPS and says, in
// words a customer understands, what happened.
//
// The HTTP client is built for untrusted destinations: every connection
// passes the egress guard on the address actually dialled, proxies from the
// environment are ignored, redirects are never followed, certificates are
// verified, and one deadline bounds the whole exchange.
//
// It also bounds what a hostile receiver can do to the dispatcher and to
// other deliveries (docs/security.md, "One response, one delivery"):
// deliveries go over HTTP/1.1 only, one request per connection at a time,
// so one answer can only fail its own delivery and no HTTP/2 control frame
// ever reaches the dispatcher; response headers are read up to
// MaxResponseHeaderBytes; connections per host are bounded (pool.go); and
// new connections to one host are rate-limited (connrate.go). The HTTP/1.1
// exchange itself is conn.go's: the delivery's goroutine writes and reads
// its connection without net/http's transport.
package delivery

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"time"

	"github.com/sundial-run/sundial/pkg/egress"
)

// Options configure a Client.
type Options struct {
	// Timeout bounds the whole exchange: connect, TLS, request, response
	// headers and the excerpt read.
	Timeout time.Duration
	// ExcerptBytes is how much of the response body is kept.
	ExcerptBytes int
	// HeaderPrefix names the Sundial headers: <Prefix>-Signature, ...
	HeaderPrefix string
	// UserAgent is sent with every delivery.
	UserAgent string
	// PublicURL is the deployment's public base URL (the gateway as
	// receivers reach it), on which the ack and nack URLs are built.
	PublicURL string
	// RootCAs verify receivers' certificates (see LoadRoots).
	RootCAs *x509.CertPool
	// Guard refuses internal destinations.
	Guard *egress.Guard
	// Resolver looks up receivers' names (nil: the system's); tests point
	// it at a DNS server of their own.
	Resolver *net.Resolver
	// HostConcurrency is the most deliveries in flight to one host (the
	// dispatcher's per-host ceiling; 0: DefaultHostConcurrency). As many
	// idle connections per host are kept, so that keep-alive holds at
	// that concurrency, and as many new connections may open at once.
	HostConcurrency int
	// ConnectRate is how many new connections per second one host gets
	// once that burst is spent (0: DefaultConnectRate).
	ConnectRate int
}

// Defaults of the Options that may be left zero.
const (
	DefaultHostConcurrency = 64
	DefaultConnectRate     = 50
)

// MaxResponseHeaderBytes bounds a response's status line and headers; a
// receiver sending more fails its delivery with "response headers larger
// than 64 KiB" and the connection is closed after reading at most that much
// (and a read buffer) of it.
const MaxResponseHeaderBytes = egress.MaxResponseHeaderBytes

// Client delivers hooks. It is safe for concurrent use and keeps
// connections to receivers alive between deliveries.
type Client struct {
	conns     *pool
	timeout   time.Duration
	excerpt   int
	header    headerNames
	userAgent string
	publicURL string
	warm      *warmHosts
	targets   *targets
}

// idleConnTimeout is how long an unused connection to a receiver is kept.
const idleConnTimeout = 90 * time.Second

// maxWarmHosts bounds the hosts whose first connection is gated (warm.go),
// and maxRateHosts those whose new connections are counted (connrate.go).
const (
	maxWarmHosts = 10000
	maxRateHosts = 10000
)

// maxSessions bounds the hosts whose TLS sessions are kept for resumption,
// and maxIdleConns the idle connections kept in all.
const (
	maxSessions  = 1024
	maxIdleConns = 1024
)

// maxConnectWait is the longest a delivery waits for its host's next new
// connection (connrate.go) before it is handed back unsent: long enough
// that a burst over a host's allowance is spread out rather than handed
// back, short enough not to hold a delivery slot for a host that keeps
// closing its connections.
const maxConnectWait = time.Second

// maxDrain is how much of a response body beyond the excerpt is read and
// thrown away so that the connection can be reused; a longer body costs a
// new connection rather than unbounded reading.
const maxDrain = 64 << 10

// NewClient returns a Client.
func NewClient(opts Options) (*Client, error) {
	if opts.Timeout <= 0 {
		return nil, errors.New("delivery: timeout must be positive")
	}
	if opts.Guard == nil {
		return nil, errors.New("delivery: an egress guard is required")
	}
	if opts.HostConcurrency < 0 || opts.ConnectRate < 0 {
		return nil, errors.New("delivery: host concurrency and connect rate must not be negative")
	}
	perHost := cmp.Or(opts.HostConcurrency, DefaultHostConcurrency)
	connects := newConnRate(cmp.Or(opts.ConnectRate, DefaultConnectRate), perHost, maxConnectWait, maxRateHosts)
	dialer := &net.Dialer{
		Timeout:   opts.Timeout,
		KeepAlive: 30 * time.Second,
		Control:   opts.Guard.Control,
		Resolver:  opts.Resolver,
	}
	// HTTP/1.1 only (the only protocol offered in the handshake): over
	// HTTP/2 every delivery to a host shares one connection, so one
	// hostile answer (a header over the decoder's limit, a GOAWAY, a RST
	// flood) failed every delivery on it, and the receiver could make the
	// dispatcher answer PING, SETTINGS and WINDOW_UPDATE floods. Over
	// HTTP/1.1 a connection carries one delivery at a time and nothing
	// else; the benchmarks found it no slower (docs/choices.md, "Delivery
	// details"). No proxy from the environment: HTTPS_PROXY and friends
	// would route deliveries around the egress guard.
	config := &tls.Config{
		RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		// Over HTTP/1.1 a busy host has many connections: resuming the
		// session of an earlier one skips the certificate checks, a large
		// part of a handshake's CPU on either side.
		ClientSessionCache: tls.NewLRUClientSessionCache(maxSessions),
		// A delivery is a few KiB: whole records from the first one, not
		// the small ones Go starts a connection with (one write system
		// call per record).
		DynamicRecordSizingDisabled: true,
	}
	// A host has at most as many connections as deliveries in flight to
	// it, and all of them are kept alive between deliveries: with fewer
	// idle ones, each delivery over the count closed its connection and
	// the next opened one (a TLS handshake per delivery).
	conns := newPool(connects.dial(dialer.DialContext), config, perHost, max(maxIdleConns, perHost), idleConnTimeout)
	return &Client{
		conns:     conns,
		timeout:   opts.Timeout,
		excerpt:   max(opts.ExcerptBytes, 0),
		header:    newHeaderNames(opts.HeaderPrefix),
		userAgent: opts.UserAgent,
		publicURL: opts.PublicURL,
		warm:      newWarmHosts(idleConnTimeout, maxWarmHosts),
		targets:   &targets{},
	}, nil
}

// Close closes the idle connections; a delivery in flight closes its own
// when it ends.
func (c *Client) Close() {
	c.conns.close()
}

// Package delivery sends one hook to its receiver over HTTPS and says, in
// words a customer understands, what happened.
//
// The HTTP client is built for untrusted destinations: every connection
// passes the egress guard on the address actually dialled, proxies from the
// environment are ignored, redirects are never followed, certificates are
// verified, and one deadline bounds the whole exchange.
package delivery

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
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
}

// Client delivers hooks. It is safe for concurrent use and keeps
// connections to receivers alive between deliveries.
type Client struct {
	http      *http.Client
	transport *http.Transport
	timeout   time.Duration
	excerpt   int
	header    headerNames
	userAgent string
	publicURL string
	warm      *warmHosts
}

// idleConnTimeout is how long an unused connection to a receiver is kept.
const idleConnTimeout = 90 * time.Second

// maxWarmHosts bounds the hosts whose first connection is gated (warm.go).
const maxWarmHosts = 10000

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
	dialer := &net.Dialer{
		Timeout:   opts.Timeout,
		KeepAlive: 30 * time.Second,
		Control:   opts.Guard.Control,
		Resolver:  opts.Resolver,
	}
	transport := &http.Transport{
		// Nil: HTTPS_PROXY and friends would route deliveries around the
		// egress guard (the guard would check the proxy, not the receiver).
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		TLSClientConfig:     &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: opts.Timeout,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     idleConnTimeout,
		// Receivers get exactly the headers of the delivery contract; Go
		// would otherwise add Accept-Encoding and decompress the answer.
		DisableCompression: true,
		// Most of a delivery's headers are new every time (its id,
		// timestamp, signatures, ack and nack URLs): in HPACK's dynamic
		// table they only evict one another, and that churn (hashing and
		// map updates per header) was a visible share of the
		// dispatcher's CPU. A table this small indexes nothing; the few
		// repeated headers go out literally, a few dozen bytes more.
		HTTP2: &http.HTTP2Config{MaxEncoderHeaderTableSize: 1},
	}
	return &Client{
		http: &http.Client{
			Transport: transport,
			// A redirect is an answer like any other non-2xx: following it
			// would send a signed payload somewhere the customer never named.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		transport: transport,
		timeout:   opts.Timeout,
		excerpt:   max(opts.ExcerptBytes, 0),
		header:    newHeaderNames(opts.HeaderPrefix),
		userAgent: opts.UserAgent,
		publicURL: opts.PublicURL,
		warm:      newWarmHosts(idleConnTimeout, maxWarmHosts),
	}, nil
}

// Close releases idle connections.
func (c *Client) Close() {
	c.transport.CloseIdleConnections()
}

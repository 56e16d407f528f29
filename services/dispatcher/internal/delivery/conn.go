package delivery

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// One connection to a receiver, carrying one delivery at a time over
// HTTP/1.1. The delivery's goroutine writes the request and reads the
// answer itself: net/http's transport ran two goroutines per connection
// and handed every request and answer between them and the caller, which
// was a large share of a delivery's CPU on the client's side
// (BenchmarkSendToOneHost against BenchmarkExchangeFloor;
// docs/benchmarks.md, "The delivery's HTTP/1.1 exchange"). What the
// transport bounded is bounded here too:
// the answer's headers (MaxResponseHeaderBytes), the 1xx answers before
// the final one (max1xx), the body read to keep the connection
// (maxDrain), the whole exchange (the deadline, on the socket), and the
// connections per host (pool.go).

// errHeadersTooLarge is an answer whose status line and headers went over
// MaxResponseHeaderBytes; Describe puts it as tooLargeHeaders.
var errHeadersTooLarge = errors.New("delivery: response headers larger than the limit")

// errTooMany1xx is an answer that kept sending informational statuses.
var errTooMany1xx = errors.New("too many 1xx informational responses")

// max1xx is how many 1xx answers (100 Continue, 103 Early Hints) may come
// before the final one, as net/http allows.
const max1xx = 5

// readBufferSize is the answer's read buffer: the status line, headers and
// excerpt of a usual answer in one read.
const readBufferSize = 4 << 10

// maxKeptRequestBuffer is the largest request buffer a connection keeps
// for its next delivery; a larger one, built for a large payload, is
// dropped after its write.
const maxKeptRequestBuffer = 64 << 10

// aLongTimeAgo is the deadline that interrupts a connection's reads and
// writes at once.
var aLongTimeAgo = time.Unix(1, 0)

// conn is an open connection to a receiver.
type conn struct {
	host *hostConns
	// netConn is the TCP connection under tls; closing it ends both
	// without a close_notify a hostile receiver could stall.
	netConn net.Conn
	tls     *tls.Conn
	// raw peeks at the socket of an idle connection (idle.go); nil where
	// the connection offers none.
	raw  syscall.RawConn
	peek [1]byte
	// limit sits under br: it bounds what an answer's headers may take,
	// and is lifted for the body, which the caller bounds.
	limit io.LimitedReader
	br    *bufio.Reader
	out   bytes.Buffer
	// idleSince is when the connection went back to the pool.
	idleSince time.Time
}

// dialConn opens a TLS connection to t through dial (the egress guard and
// the host's connect rate), bounded by ctx.
func dialConn(ctx context.Context, dial dialFunc, config *tls.Config, t target) (*conn, error) {
	netConn, err := dial(ctx, "tcp", t.addr)
	if err != nil {
		return nil, err
	}
	config = config.Clone()
	config.ServerName = t.serverName
	tlsConn := tls.Client(netConn, config)
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		_ = netConn.Close()
		return nil, err
	}
	c := &conn{netConn: netConn, tls: tlsConn}
	c.limit.R = tlsConn
	c.br = bufio.NewReaderSize(&c.limit, readBufferSize)
	if sc, ok := netConn.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	return c, nil
}

// roundTrip writes the delivery and reads the answer's status and headers;
// the answer's Body reads the rest and, once closed, gives the connection
// back or closes it. The exchange's deadline, set as the connection's,
// bounds the whole exchange, body included, and the end of the exchange's
// caller's context interrupts it. On an error the connection is spent and
// the caller closes it.
func (c *conn) roundTrip(x *exchange, t target, p Prepared) (*http.Response, error) {
	if err := c.netConn.SetDeadline(x.deadline); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(x.parent, func() { _ = c.netConn.SetDeadline(aLongTimeAgo) })
	c.out.Reset()
	writeRequest(&c.out, t, p)
	_, writeErr := c.tls.Write(c.out.Bytes())
	if c.out.Cap() > maxKeptRequestBuffer {
		// An idle connection keeps no large payload's buffer: a pool of
		// them would hold megabytes each.
		c.out = bytes.Buffer{}
	}
	resp, err := c.readHead()
	if err != nil {
		stop()
		if writeErr != nil {
			return nil, writeErr
		}
		return nil, err
	}
	// A receiver may answer (413, say) and close before it has read a
	// large body: its answer is the outcome, as net/http's transport
	// had it, and the connection is spent.
	resp.Body = &connBody{body: resp.Body, conn: c, stop: stop,
		keep: writeErr == nil && !resp.Close && resp.StatusCode != http.StatusSwitchingProtocols}
	return resp, nil
}

// writeRequest writes the POST as net/http would: the request line, Host,
// the prepared headers (writeHeader), Content-Length and the body.
func writeRequest(b *bytes.Buffer, t target, p Prepared) {
	b.Grow(len(p.Body) + 1024)
	b.WriteString("POST ")
	b.WriteString(t.requestURI)
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(t.host)
	b.WriteString("\r\n")
	writeHeader(b, p.Header)
	b.WriteString("Content-Length: ")
	b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(len(p.Body)), 10))
	b.WriteString("\r\n\r\n")
	b.Write(p.Body)
}

// writeHeader writes h as http.Header.Write does, field by field in the
// order of their names, each value with its line breaks made spaces and
// its surrounding blanks trimmed, without its allocations, which were a
// visible share of the dispatcher's CPU in a burst
// (docs/benchmarks.md, "The delivery's HTTP/1.1 exchange").
// Header.Write also drops a field whose name is not a valid token; every
// name here is Sundial's own (Prepare), from a prefix its configuration
// checks (signing.ValidHeaderPrefix), so none is dropped.
// TestWriteHeaderIsHeaderWrite holds the two alike.
func writeHeader(b *bytes.Buffer, h http.Header) {
	var names [16]string
	keys := names[:0]
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			if strings.ContainsAny(v, "\r\n") {
				v = strings.Map(lineBreakToSpace, v)
			}
			b.WriteString(k)
			b.WriteString(": ")
			b.WriteString(textproto.TrimString(v))
			b.WriteString("\r\n")
		}
	}
}

func lineBreakToSpace(r rune) rune {
	if r == '\r' || r == '\n' {
		return ' '
	}
	return r
}

// readHead reads the final answer's status line and headers, skipping up
// to max1xx informational answers, all within MaxResponseHeaderBytes.
func (c *conn) readHead() (*http.Response, error) {
	c.limit.N = MaxResponseHeaderBytes
	for range max1xx + 1 {
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			if c.limit.N <= 0 {
				return nil, errHeadersTooLarge
			}
			return nil, err
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			// The body's length is the answer's to tell; the caller reads
			// a bounded part of it.
			c.limit.N = math.MaxInt64
			return resp, nil
		}
	}
	return nil, errTooMany1xx
}

// connBody is an answer's body on a connection of the pool.
type connBody struct {
	body io.ReadCloser
	conn *conn
	// stop unhooks the exchange's caller's context; false when that
	// context ended first and the connection's deadline was moved to
	// interrupt it.
	stop func() bool
	// keep is whether the answer lets the connection carry another
	// delivery (no "Connection: close", no protocol switch).
	keep   bool
	ended  bool
	closed bool
}

func (b *connBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.ended = true
	}
	return n, err
}

// Close gives the connection back when the body was read to its end and
// nothing else arrived; otherwise it closes the connection. It never reads:
// net/http's body would read the rest, however long.
func (b *connBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	interrupted := !b.stop()
	if b.ended && b.keep && !interrupted && b.conn.br.Buffered() == 0 {
		b.conn.host.release(b.conn)
		return nil
	}
	b.conn.host.discard(b.conn)
	return nil
}

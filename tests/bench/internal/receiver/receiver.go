// Package receiver is the benchmark's endpoint: the hooks' domain over
// HTTPS, or the plain-HTTP server a `sundial listen` process forwards to. It
// answers 200 at once, over HTTP/1.1 (and HTTP/2 over HTTPS), and records
// each arrival's Sundial-Id and time in memory allocated up front: recording
// costs an atomic increment and a store, no lock, no allocation and no log
// line. Made realistic (SetRealistic), it also verifies each request's
// signature and answers path by path as real receivers do (Behaviour), and
// records when it answered.
package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	https "github.com/sundial-run/sundial/testkit/receiver"
)

// Arrival is one request that reached the receiver.
type Arrival struct {
	// ID is the request's Sundial-Id (the zero UUID if it had none).
	ID uuid.UUID
	// Since is when it arrived, measured on the monotonic clock from the
	// receiver's Base, so that a wall-clock step during a run cannot bend it.
	Since time.Duration
	// Answered is when its answer was decided, on the same clock: 0 for a
	// plain receiver, and for a realistic one's request still waiting.
	Answered time.Duration
}

// slot holds one arrival; done is set after the arrival is written, so a
// reader running during deliveries sees only whole arrivals.
type slot struct {
	arrival Arrival
	done    atomic.Bool
}

// Receiver is a running endpoint.
type Receiver struct {
	// Base is the instant arrivals are measured from: arrival i happened at
	// Base.Add(arrivals[i].Since) on the wall clock.
	Base time.Time
	// CAFile is the PEM file of the CA of the receiver's certificate, for
	// SUNDIAL_DELIVERY_CA_FILE; empty for a plain-HTTP receiver.
	CAFile string

	addr     string
	shutdown func(context.Context) error
	slots    []slot
	// answered holds each slot's Arrival.Answered, written once the answer
	// is decided, which may be long after the slot is done.
	answered []atomic.Int64
	real     atomic.Pointer[Realistic]
	badSigs  atomic.Int64
	// misrouted counts a realistic receiver's requests off their Routes.
	misrouted atomic.Int64
	next      atomic.Int64
	overflow  atomic.Int64
	// conns counts the connections a plain-HTTP receiver accepted.
	conns atomic.Int64
}

// Start listens on 127.0.0.1 (any free port) with room for capacity
// arrivals; arrivals beyond it are counted, not recorded. dir receives the
// CA file.
func Start(capacity int, dir string) (*Receiver, error) {
	r := &Receiver{
		CAFile:   filepath.Join(dir, "receiver-ca.pem"),
		slots:    make([]slot, capacity),
		answered: make([]atomic.Int64, capacity),
	}
	if err := https.WriteCAFile(r.CAFile); err != nil {
		return nil, err
	}
	r.Base = time.Now()
	// Connection errors are the dispatcher's to report, not ours to print:
	// the server's error log is left discarded.
	srv, err := https.Start(http.HandlerFunc(r.serve), https.Options{HTTP2: true})
	if err != nil {
		return nil, err
	}
	r.addr, r.shutdown = srv.Addr(), srv.Shutdown
	return r, nil
}

// StartHTTP listens over plain HTTP/1.1 on 127.0.0.1 (any free port) with
// room for capacity arrivals: the local server `sundial listen
// --forward-to` posts to, as a developer's would be.
func StartHTTP(capacity int) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver listen: %w", err)
	}
	r := &Receiver{slots: make([]slot, capacity), answered: make([]atomic.Int64, capacity), addr: ln.Addr().String()}
	r.Base = time.Now()
	srv := &http.Server{
		Handler:           http.HandlerFunc(r.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				r.conns.Add(1)
			}
		},
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	r.shutdown = func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
		return err
	}
	return r, nil
}

// Domain is the receiver's host:port: the project's domain.
func (r *Receiver) Domain() string { return r.addr }

// URL is the receiver's root URL over plain HTTP (a StartHTTP receiver).
func (r *Receiver) URL() string { return "http://" + r.addr }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	since := time.Since(r.Base)
	id, _ := uuid.Parse(req.Header.Get("Sundial-Id"))
	i := r.next.Add(1) - 1
	if i < int64(len(r.slots)) {
		r.slots[i].arrival = Arrival{ID: id, Since: since}
		r.slots[i].done.Store(true)
	} else {
		r.overflow.Add(1)
	}
	if real := r.real.Load(); real != nil {
		status := r.answerRealistic(real, req, id)
		if i < int64(len(r.slots)) {
			r.answered[i].Store(int64(time.Since(r.Base)))
		}
		w.WriteHeader(status)
		return
	}
	// Read the body so the connection can be reused, as a real receiver would.
	_, _ = io.Copy(io.Discard, req.Body)
	w.WriteHeader(http.StatusOK)
}

// Realistic is what a realistic receiver does beyond recording.
type Realistic struct {
	// SigningKey, when set, is the key every request's signature is
	// verified with (Verify); a request that fails is answered 401 and
	// counted (BadSignatures).
	SigningKey string
	// PathKeys, when set, are the signing keys of paths whose hooks
	// another project sends (its own key), in place of SigningKey.
	PathKeys  map[string]string
	Behaviour Behaviour
	// Routes, when set, is each hook's path by Sundial-Id: a request on
	// another path, or of an id it does not hold, is counted (Misrouted)
	// and answered as any other.
	Routes map[uuid.UUID]string
}

// keyOf is the signing key of a request on path.
func (real *Realistic) keyOf(path string) string {
	if key, ok := real.PathKeys[path]; ok {
		return key
	}
	return real.SigningKey
}

// SetRealistic makes the receiver realistic from its next request on; it
// is set once, before the first delivery.
func (r *Receiver) SetRealistic(real *Realistic) { r.real.Store(real) }

// maxBody bounds the body a realistic receiver reads to verify it.
const maxBody = 2 << 20

func (r *Receiver) answerRealistic(real *Realistic, req *http.Request, id uuid.UUID) int {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody))
	if err != nil {
		return http.StatusBadRequest
	}
	if key := real.keyOf(req.URL.Path); key != "" && !Verify(key, req.Header, body, time.Now()) {
		r.badSigs.Add(1)
		return http.StatusUnauthorized
	}
	if real.Routes != nil {
		if path, ok := real.Routes[id]; !ok || path != req.URL.Path {
			r.misrouted.Add(1)
		}
	}
	return real.Behaviour.answer(req.Context(), req.URL.Path, id)
}

// BadSignatures is how many requests a realistic receiver refused for
// their signature.
func (r *Receiver) BadSignatures() int { return int(r.badSigs.Load()) }

// Misrouted is how many requests a realistic receiver with Routes saw on
// another path than their hook's, or for a hook it did not know.
func (r *Receiver) Misrouted() int { return int(r.misrouted.Load()) }

// Count is how many requests have arrived so far.
func (r *Receiver) Count() int { return int(r.next.Load()) }

// Connections is how many connections a plain-HTTP receiver has accepted
// so far (0 for an HTTPS one): how well its client reuses them.
func (r *Receiver) Connections() int { return int(r.conns.Load()) }

// Overflow is how many arrivals did not fit in the capacity.
func (r *Receiver) Overflow() int { return int(r.overflow.Load()) }

// Arrivals returns a copy of the arrivals recorded so far; one being
// recorded at this very moment is left out.
func (r *Receiver) Arrivals() []Arrival {
	n := min(int(r.next.Load()), len(r.slots))
	out := make([]Arrival, 0, n)
	for i := range n {
		if r.slots[i].done.Load() {
			out = append(out, r.arrival(i))
		}
	}
	return out
}

// arrival is slot i's arrival with its answer time so far; slot i is done.
func (r *Receiver) arrival(i int) Arrival {
	a := r.slots[i].arrival
	a.Answered = time.Duration(r.answered[i].Load())
	return a
}

// ArrivalsFrom returns the arrivals recorded from index from on, up to the
// first one still being recorded, and the index to continue from: a caller
// that follows the deliveries reads each arrival once.
func (r *Receiver) ArrivalsFrom(from int) ([]Arrival, int) {
	n := min(int(r.next.Load()), len(r.slots))
	var out []Arrival
	i := from
	for ; i < n && r.slots[i].done.Load(); i++ {
		out = append(out, r.arrival(i))
	}
	return out, i
}

// At is the wall-clock instant of an arrival.
func (r *Receiver) At(a Arrival) time.Time { return r.Base.Add(a.Since) }

// Close stops the server.
func (r *Receiver) Close(ctx context.Context) error {
	if err := r.shutdown(ctx); err != nil {
		return fmt.Errorf("receiver: %w", err)
	}
	return nil
}

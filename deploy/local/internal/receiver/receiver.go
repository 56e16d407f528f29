// Package receiver is the demo receiver of a local run: the test kit's HTTPS
// endpoint on 127.0.0.1 (certificate and CA made at start) with a handler
// that logs every delivery it
// gets and whether its signature verifies, so that a person trying Sundial
// sees a hook arrive without writing a receiver first.
package receiver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sundial-run/sundial/pkg/signing"
	https "github.com/sundial-run/sundial/testkit/receiver"
)

// Tolerance is how far a delivery's timestamp may be from now, as the
// specification recommends to receivers.
const Tolerance = 5 * time.Minute

// maxBody bounds what one delivery may make us read.
const maxBody = 16 << 20

// Options for Start.
type Options struct {
	// CAFile is where the PEM certificate of the receiver's CA is written,
	// for the dispatcher to trust (SUNDIAL_DELIVERY_CA_FILE).
	CAFile string
	// HeaderPrefix names the headers read: <Prefix>-Signature,
	// <Prefix>-Timestamp, <Prefix>-Id. Default "Sundial".
	HeaderPrefix string
	// Log gets one line per delivery; nil discards.
	Log *slog.Logger
	// Addr is the address to listen on if it is free (the previous run's,
	// so that the demo project's domain, and a sundial.toml pulled from
	// it, stay valid); else, or when empty, a free port of 127.0.0.1.
	Addr string
}

// Receiver is a running demo receiver.
type Receiver struct {
	srv    *https.Receiver
	prefix string
	log    *slog.Logger
	key    atomic.Pointer[string]
}

// Start writes the CA certificate and starts serving HTTPS on opts.Addr
// when it is free, else on a free port of 127.0.0.1.
func Start(opts Options) (*Receiver, error) {
	if opts.HeaderPrefix == "" {
		opts.HeaderPrefix = "Sundial"
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if err := https.WriteCAFile(opts.CAFile); err != nil {
		return nil, fmt.Errorf("demo receiver: %w", err)
	}
	r := &Receiver{prefix: opts.HeaderPrefix, log: opts.Log}
	serve := https.Options{
		Localhost: true,
		ErrorLog:  slog.NewLogLogger(opts.Log.Handler(), slog.LevelDebug),
		Addr:      opts.Addr,
	}
	srv, err := https.Start(r, serve)
	if err != nil && opts.Addr != "" {
		opts.Log.Info("demo receiver: its previous address is taken, so it listens on another", "previous", opts.Addr)
		serve.Addr = ""
		srv, err = https.Start(r, serve)
	}
	if err != nil {
		return nil, fmt.Errorf("demo receiver: %w", err)
	}
	r.srv = srv
	return r, nil
}

// Host is the receiver's host:port, the domain of the demo project.
func (r *Receiver) Host() string { return r.srv.Addr() }

// SetSigningKey sets the key that signatures are checked with; until it is
// set, every delivery is logged as unverifiable.
func (r *Receiver) SetSigningKey(key string) { r.key.Store(&key) }

// Shutdown stops accepting deliveries and waits for those in progress.
func (r *Receiver) Shutdown(ctx context.Context) error {
	if err := r.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("demo receiver: %w", err)
	}
	return nil
}

// ServeHTTP logs the delivery and accepts it.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		r.log.Warn("demo receiver: unreadable request", "method", req.Method, "path", req.URL.RequestURI(), "err", err)
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	r.log.Info("demo receiver: delivery",
		"method", req.Method,
		"path", req.URL.RequestURI(),
		r.prefix+"-Id", req.Header.Get(r.prefix+"-Id"),
		"signature", r.verdict(req.Header, body),
		"body", bodyValue(body))
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"received":true}`+"\n")
}

// bodyValue shows a JSON body as JSON in a JSON log line, anything else as
// text.
func bodyValue(body []byte) any {
	if json.Valid(body) {
		return json.RawMessage(body)
	}
	return string(body)
}

// verdict says whether the delivery is signed with the project's key:
// valid, invalid (wrong key, altered body or stale timestamp), missing, or
// unchecked (no key known yet). Sundial's signature is checked when present,
// else the Standard Webhooks one (a project whose signatureScheme is
// standard).
func (r *Receiver) verdict(h http.Header, body []byte) string {
	sig := h.Get(r.prefix + "-Signature")
	std := h.Get(signing.StandardSignature)
	key := r.key.Load()
	switch {
	case sig == "" && std == "":
		return "missing"
	case key == nil:
		return "unchecked"
	case sig != "" && signing.Verify(*key, sig, h.Get(r.prefix+"-Timestamp"), body, time.Now(), Tolerance):
		return "valid"
	case sig == "" && signing.VerifyStandard(*key, h, body, time.Now(), Tolerance):
		return "valid"
	default:
		return "invalid"
	}
}

// Package smtptest runs a real SMTP server (github.com/emersion/go-smtp)
// inside the test process, with the test kit's certificate (signed by the
// CA that also signs the HTTPS receivers') for implicit TLS and STARTTLS and optional AUTH PLAIN, and keeps the messages it receives.
package smtptest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/sundial-run/sundial/testkit/receiver"
)

// TLS modes of the server; the same words as an e-mail channel's tls.
const (
	// TLSNone speaks plain SMTP and offers no STARTTLS.
	TLSNone = "none"
	// TLSStartTLS speaks plain SMTP and offers STARTTLS.
	TLSStartTLS = "starttls"
	// TLSImplicit speaks TLS from the first byte.
	TLSImplicit = "tls"
)

// Options for Start.
type Options struct {
	// TLS is TLSNone (the default), TLSStartTLS or TLSImplicit.
	TLS string
	// Username and Password, when set, are required (AUTH PLAIN) before a
	// message is accepted. AUTH is offered only over TLS.
	Username string
	Password string
	// RejectRecipients are answered "550 mailbox unavailable" at RCPT TO.
	RejectRecipients []string
}

// Message is one message the server accepted.
type Message struct {
	// From is the envelope sender (MAIL FROM), To the envelope recipients.
	From string
	To   []string
	// Data is the message as received: headers and body.
	Data []byte
}

// Server is a running SMTP server on 127.0.0.1.
type Server struct {
	// Addr is host:port, Host is "127.0.0.1" and Port the port.
	Addr string
	Host string
	Port int
	// CertPool trusts the server's certificate (the test kit's CA, which
	// signs the HTTPS receivers' too): trust it to verify the server.
	CertPool *x509.CertPool

	opts     Options
	mu       sync.Mutex
	messages []Message
	arrived  chan struct{}
}

// Start runs a server and stops it when t ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	cert, pool := certificate(t)
	s := &Server{CertPool: pool, opts: opts, arrived: make(chan struct{}, 1)}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &session{server: s}, nil
	}))
	srv.Domain = "localhost"
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.MaxMessageBytes = 10 << 20
	srv.MaxRecipients = 100
	srv.ErrorLog = log.New(io.Discard, "", 0)
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("smtptest: listen: %v", err)
	}
	switch opts.TLS {
	case TLSNone, "":
	case TLSStartTLS:
		srv.TLSConfig = tlsConfig
	case TLSImplicit:
		l = tls.NewListener(l, tlsConfig)
	default:
		_ = l.Close()
		t.Fatalf("smtptest: unknown TLS mode %q", opts.TLS)
	}
	s.Addr = l.Addr().String()
	s.Host = "127.0.0.1"
	s.Port = l.Addr().(*net.TCPAddr).Port
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		// Close closes only the listeners Serve has registered; one not
		// yet registered (a test that never connected) is closed here.
		_ = srv.Close()
		_ = l.Close()
		<-done
	})
	return s
}

// Messages returns the messages received so far, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.messages)
}

// Wait waits up to 30 s until at least n messages arrived and returns them.
func (s *Server) Wait(t testing.TB, n int) []Message {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		if got := s.Messages(); len(got) >= n {
			return got
		}
		select {
		case <-s.arrived:
		case <-deadline.C:
			t.Fatalf("smtptest: %d messages after 30s, want %d", len(s.Messages()), n)
		}
	}
}

func (s *Server) add(m Message) {
	s.mu.Lock()
	s.messages = append(s.messages, m)
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
}

// session is one SMTP connection's transaction.
type session struct {
	server *Server
	authed bool
	from   string
	to     []string
}

var errMailboxUnavailable = &smtp.SMTPError{
	Code:         550,
	EnhancedCode: smtp.EnhancedCode{5, 1, 1},
	Message:      "mailbox unavailable",
}

func (se *session) AuthMechanisms() []string {
	if se.server.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (se *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != se.server.opts.Username || password != se.server.opts.Password {
			return smtp.ErrAuthFailed
		}
		se.authed = true
		return nil
	}), nil
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if se.server.opts.Username != "" && !se.authed {
		return smtp.ErrAuthRequired
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if slices.Contains(se.server.opts.RejectRecipients, to) {
		return errMailboxUnavailable
	}
	se.to = append(se.to, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(se.to) == 0 {
		return errors.New("no recipients")
	}
	se.server.add(Message{From: se.from, To: slices.Clone(se.to), Data: data})
	return nil
}

func (se *session) Reset() { se.from, se.to = "", nil }

func (se *session) Logout() error { return nil }

// certificate is the test kit's server certificate for 127.0.0.1 and
// localhost, and a pool that trusts its CA.
func certificate(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	cert, err := receiver.Certificate(true)
	if err != nil {
		t.Fatalf("smtptest: %v", err)
	}
	pool, err := receiver.CAPool()
	if err != nil {
		t.Fatalf("smtptest: %v", err)
	}
	return cert, pool
}

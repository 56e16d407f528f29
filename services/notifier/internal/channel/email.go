package channel

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/services/notifier/internal/message"
)

// errNoOwnerSMTP is the failure of an owner e-mail when the operator set
// up no SMTP server.
var errNoOwnerSMTP = errors.New("no SMTP server is configured for owner e-mails (SUNDIAL_NOTIFIER_SMTP_HOST)")

func (s *Sender) sendEmail(ctx context.Context, t Target, m message.Message) error {
	cfg, err := config[channelconfig.Email](t)
	if err != nil {
		return err
	}
	return s.mail(ctx, cfg, cfg.To, m, true)
}

// sendOwners writes to the project's owners through the operator's SMTP
// server, which the operator configured and trusts: no guard.
func (s *Sender) sendOwners(ctx context.Context, t Target, m message.Message) error {
	if s.opts.OwnerSMTP == nil {
		return errNoOwnerSMTP
	}
	if len(t.To) == 0 {
		return errors.New("the project has no owner e-mail address")
	}
	for _, to := range t.To {
		if err := channelconfig.CheckAddress(to); err != nil {
			return fmt.Errorf("owner address: %w", err)
		}
	}
	return s.mail(ctx, *s.opts.OwnerSMTP, t.To, m, false)
}

// mail sends m to the recipients to through the SMTP server of cfg. The
// password never appears in the error, even if a server were to echo it.
func (s *Sender) mail(ctx context.Context, cfg channelconfig.Email, to []string, m message.Message, guarded bool) error {
	if cfg.TLS == channelconfig.TLSNone && cfg.Username != "" {
		return errors.New(`SMTP credentials are never sent unencrypted (tls "none")`)
	}
	// Checked again here: these go into headers, and a line break in one
	// would let it write headers of its own.
	if err := channelconfig.CheckAddress(cfg.From); err != nil {
		return fmt.Errorf("sender address: %w", err)
	}
	msg, err := compose(cfg.From, to, m, time.Now())
	if err != nil {
		return err
	}
	err = s.smtpExchange(ctx, cfg, to, msg, guarded)
	if err == nil {
		return nil
	}
	text := err.Error()
	if cfg.Password != "" {
		text = strings.ReplaceAll(text, cfg.Password, "…")
	}
	return errors.New(text)
}

// smtpExchange is one SMTP session, bounded by the timeout as a whole.
func (s *Sender) smtpExchange(ctx context.Context, cfg channelconfig.Email, to []string, msg []byte, guarded bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	conn, err := s.dialSMTP(ctx, cfg, guarded)
	if err != nil {
		return errors.New(describe(err, s.opts.Timeout))
	}
	// The connection's deadline bounds every read and write; closing it
	// when ctx ends covers a caller that stops early.
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	c, err := smtp.NewClient(conn, cfg.Host)
	if err != nil {
		_ = conn.Close()
		return s.smtpError(ctx, "greeting", err)
	}
	defer func() { _ = c.Close() }()
	if err := s.secure(ctx, c, cfg); err != nil {
		return err
	}
	return s.transaction(ctx, c, cfg.From, to, msg)
}

// dialSMTP connects, through the guard unless the server is the
// operator's, and for implicit TLS completes the handshake.
func (s *Sender) dialSMTP(ctx context.Context, cfg channelconfig.Email, guarded bool) (net.Conn, error) {
	dialer := &net.Dialer{Timeout: s.opts.Timeout}
	if guarded {
		dialer.Control = s.opts.Guard.Control
	}
	conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, err
	}
	if cfg.TLS != channelconfig.TLSImplicit {
		return conn, nil
	}
	tlsConn := tls.Client(conn, s.tlsConfig(cfg.Host))
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return tlsConn, nil
}

func (s *Sender) tlsConfig(host string) *tls.Config {
	return &tls.Config{ServerName: host, RootCAs: s.opts.RootCAs, MinVersion: tls.VersionTLS12}
}

// secure upgrades the session under policy starttls (refusing a server
// that cannot) and authenticates when there are credentials.
func (s *Sender) secure(ctx context.Context, c *smtp.Client, cfg channelconfig.Email) error {
	if err := c.Hello("localhost"); err != nil {
		return s.smtpError(ctx, "EHLO", err)
	}
	if cfg.TLS == channelconfig.TLSStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return errors.New(`the SMTP server does not offer STARTTLS, which the channel requires (tls "starttls")`)
		}
		if err := c.StartTLS(s.tlsConfig(cfg.Host)); err != nil {
			return s.smtpError(ctx, "STARTTLS", err)
		}
	}
	if cfg.Username == "" {
		return nil
	}
	if ok, _ := c.Extension("AUTH"); !ok {
		return errors.New("the SMTP server does not offer authentication (AUTH), but the channel has a username")
	}
	// net/smtp's PlainAuth itself refuses to send the password over a
	// connection that is not TLS.
	if err := c.Auth(smtp.PlainAuth("", cfg.Username, cfg.Password, cfg.Host)); err != nil {
		return s.smtpError(ctx, "authentication", err)
	}
	return nil
}

// transaction sends the envelope and the message, then says goodbye.
func (s *Sender) transaction(ctx context.Context, c *smtp.Client, from string, to []string, msg []byte) error {
	if err := c.Mail(from); err != nil {
		return s.smtpError(ctx, "MAIL FROM "+from, err)
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt); err != nil {
			return s.smtpError(ctx, "RCPT TO "+rcpt, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return s.smtpError(ctx, "DATA", err)
	}
	if _, err := w.Write(msg); err != nil {
		return s.smtpError(ctx, "DATA", err)
	}
	if err := w.Close(); err != nil {
		return s.smtpError(ctx, "DATA", err)
	}
	// The server accepted the message: a failed goodbye changes nothing.
	_ = c.Quit()
	return nil
}

// smtpError describes a failed step: "SMTP 550 mailbox unavailable (RCPT TO
// a@b.c)"; a deadline reached mid-session is a timeout whatever the step.
func (s *Sender) smtpError(ctx context.Context, step string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = context.DeadlineExceeded
	}
	var protoErr *textproto.Error
	if errors.As(err, &protoErr) {
		return errors.New(describe(err, s.opts.Timeout) + " (" + step + ")")
	}
	return errors.New(describe(err, s.opts.Timeout))
}

// compose writes the RFC 5322 message: multipart/alternative with a
// plain-text and an HTML part, both quoted-printable UTF-8.
func compose(from string, to []string, m message.Message, now time.Time) ([]byte, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, part := range []struct{ contentType, content string }{
		{"text/plain; charset=utf-8", m.Text()},
		{"text/html; charset=utf-8", m.HTML()},
	} {
		w, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.contentType},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, fmt.Errorf("compose e-mail: %w", err)
		}
		qp := quotedprintable.NewWriter(w)
		if _, err := qp.Write([]byte(part.content)); err != nil {
			return nil, fmt.Errorf("compose e-mail: %w", err)
		}
		if err := qp.Close(); err != nil {
			return nil, fmt.Errorf("compose e-mail: %w", err)
		}
	}
	if err := mw.Close(); err != nil {
		return nil, fmt.Errorf("compose e-mail: %w", err)
	}
	var msg bytes.Buffer
	header := func(name, value string) { msg.WriteString(name + ": " + value + "\r\n") }
	header("From", (&mail.Address{Name: "Sundial", Address: from}).String())
	header("To", strings.Join(to, ", "))
	// Subject never holds a line break (message.Subject); Q-encoding
	// leaves plain ASCII as it is.
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject()))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", "<"+m.GroupID.String()+"@sundial>")
	header("MIME-Version", "1.0")
	header("Content-Type", `multipart/alternative; boundary="`+mw.Boundary()+`"`)
	msg.WriteString("\r\n")
	msg.Write(body.Bytes())
	return msg.Bytes(), nil
}

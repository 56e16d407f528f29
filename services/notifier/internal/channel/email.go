package channel

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strconv"
	"strings"

	mail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"

	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/services/notifier/internal/message"
)

// errNoOwnerSMTP is the failure of an owner e-mail when the operator set
// up no SMTP server.
var errNoOwnerSMTP = errors.New("no SMTP server is configured for owner e-mails (SUNDIAL_NOTIFIER_SMTP_HOST)")

// errNoSTARTTLS is the failure of a channel that requires STARTTLS when
// the server does not offer it.
var errNoSTARTTLS = errors.New(`the SMTP server does not offer STARTTLS, which the channel requires (tls "starttls")`)

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
	// would let it write headers of its own. go-mail would also accept a
	// display name, which the envelope cannot carry.
	if err := channelconfig.CheckAddress(cfg.From); err != nil {
		return fmt.Errorf("sender address: %w", err)
	}
	msg, err := compose(cfg.From, to, m)
	if err != nil {
		return err
	}
	err = s.smtpSession(ctx, cfg, to, msg, guarded)
	if err == nil {
		return nil
	}
	text := err.Error()
	if cfg.Password != "" {
		text = strings.ReplaceAll(text, cfg.Password, "…")
	}
	return errors.New(text)
}

// compose builds the message: multipart/alternative with a plain-text and
// an HTML part, both quoted-printable UTF-8 (go-mail's defaults).
func compose(from string, to []string, m message.Message) (*mail.Msg, error) {
	// No User-Agent: the recipient has no use for the library's version.
	msg := mail.NewMsg(mail.WithNoDefaultUserAgent())
	if err := msg.FromFormat("Sundial", from); err != nil {
		return nil, fmt.Errorf("sender address: %w", err)
	}
	if err := msg.To(to...); err != nil {
		return nil, fmt.Errorf("recipient address: %w", err)
	}
	// go-mail Q-encodes a subject that is not plain ASCII, and
	// message.Subject never holds a line break.
	msg.Subject(m.Subject())
	msg.SetDate()
	msg.SetMessageIDWithValue(m.GroupID.String() + "@sundial")
	msg.SetBodyString(mail.TypeTextPlain, m.Text())
	msg.AddAlternativeString(mail.TypeTextHTML, m.HTML())
	return msg, nil
}

// smtpSession is one SMTP session, bounded by the timeout as a whole.
// go-mail connects (through dialSMTP), reads the greeting, says EHLO and
// upgrades with STARTTLS when the channel requires it; authentication and
// the transaction are done here, step by step, so that a refusal names its
// step and recipient.
func (s *Sender) smtpSession(ctx context.Context, cfg channelconfig.Email, to []string, msg *mail.Msg, guarded bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	dial := func(dialCtx context.Context, _, _ string) (net.Conn, error) {
		conn, err := s.dialSMTP(dialCtx, cfg, guarded)
		if err != nil {
			return nil, err
		}
		// go-mail renews the connection's deadline at every command, and
		// leaves it open after a failed step: closing it when ctx ends
		// keeps the session as a whole within the timeout, covers a caller
		// that stops early, and releases it when the session returns.
		context.AfterFunc(ctx, func() { _ = conn.Close() })
		return conn, nil
	}
	client, err := mail.NewClient(cfg.Host, s.clientOptions(cfg, dial)...)
	if err != nil {
		return fmt.Errorf("SMTP client: %w", err)
	}
	// go-mail's error says what the server answered, not to which
	// command: the handler names it.
	client.ErrorHandlerRegistry.SetDefaultHandler(commandNamer{})
	c, err := client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return s.connectError(ctx, err)
	}
	defer func() { _ = c.Close() }()
	if err := s.authenticate(ctx, c, cfg); err != nil {
		return err
	}
	return s.transaction(ctx, c, cfg.From, to, msg)
}

// clientOptions set go-mail up for cfg: its port, the TLS mode, the
// timeout of each step, and dial for the connection.
func (s *Sender) clientOptions(cfg channelconfig.Email, dial mail.DialContextFunc) []mail.Option {
	opts := []mail.Option{
		mail.WithPort(cfg.Port),
		mail.WithTimeout(s.opts.Timeout),
		mail.WithDialContextFunc(dial),
		mail.WithTLSConfig(s.tlsConfig(cfg.Host)),
		// Not the machine's host name: the server is the customer's.
		mail.WithHELO("localhost"),
	}
	switch cfg.TLS {
	case channelconfig.TLSImplicit:
		// dialSMTP does the handshake: go-mail dials TLS itself only
		// without a dial function of ours.
		opts = append(opts, mail.WithSSL())
	case channelconfig.TLSStartTLS:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	}
	return opts
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
	// A *tls.Conn: go-mail's client takes the session for encrypted by
	// its type, which PLAIN authentication requires.
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

// connectError describes a failure before the session was ready: the
// connection, the greeting, EHLO or STARTTLS.
func (s *Sender) connectError(ctx context.Context, err error) error {
	var named *commandError
	switch {
	case errors.As(err, &named):
		return s.smtpError(ctx, named.command, named.err)
	// go-mail's words under TLSMandatory (TestEmailRefusesServerWithoutSTARTTLS
	// holds them).
	case strings.Contains(err.Error(), "does not support STARTTLS"):
		return errNoSTARTTLS
	}
	return s.smtpError(ctx, "greeting", err)
}

// authenticate logs in when the channel has credentials.
func (s *Sender) authenticate(ctx context.Context, c *smtp.Client, cfg channelconfig.Email) error {
	if cfg.Username == "" {
		return nil
	}
	if ok, _ := c.Extension("AUTH"); !ok {
		return errors.New("the SMTP server does not offer authentication (AUTH), but the channel has a username")
	}
	// PLAIN refuses to send the password over a connection that is not
	// TLS (allowUnencrypted false).
	if err := c.Auth(smtp.PlainAuth("", cfg.Username, cfg.Password, cfg.Host, false)); err != nil {
		return s.smtpError(ctx, "authentication", err)
	}
	return nil
}

// transaction sends the envelope and the message, then says goodbye.
func (s *Sender) transaction(ctx context.Context, c *smtp.Client, from string, to []string, msg *mail.Msg) error {
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
	if _, err := msg.WriteTo(w); err != nil {
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
// a@b.c)"; a session cut short by ctx is a timeout or a stop whatever the
// step.
func (s *Sender) smtpError(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	var protoErr *textproto.Error
	if errors.As(err, &protoErr) {
		return errors.New(describe(err, s.opts.Timeout) + " (" + step + ")")
	}
	return errors.New(describe(err, s.opts.Timeout))
}

// commandNamer is go-mail's handler of a refused command: it keeps the
// refusal and adds the command's name.
type commandNamer struct{}

func (commandNamer) HandleError(_, command string, _ *textproto.Conn, err error) error {
	return &commandError{command: strings.ToUpper(command), err: err}
}

// commandError is a refusal with the name of the command refused.
type commandError struct {
	command string
	err     error
}

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// Package channel sends a rendered alert group to one target: a chat
// incoming webhook, a custom webhook, an SMTP server.
package channel

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/services/notifier/internal/message"
)

// KindOwners is the target of a quota alert's e-mail to the project's
// owner addresses, sent through the operator's SMTP server.
const KindOwners = "owners"

// Target is where one send goes.
type Target struct {
	// Kind is channelconfig.KindChat, KindWebhook, KindEmail or KindOwners.
	Kind string
	// Config is the channel's stored config (not for KindOwners).
	Config json.RawMessage
	// To lists the owner addresses (KindOwners only).
	To []string
	// SigningKeys sign a webhook: the active key first, then retiring ones.
	SigningKeys []string
}

// Options configure a Sender.
type Options struct {
	// Guard refuses internal destinations on the dialled address.
	Guard *egress.Guard
	// RootCAs verifies servers; nil means the system's roots.
	RootCAs *x509.CertPool
	// Timeout bounds one send, connection to last byte.
	Timeout time.Duration
	// UserAgent of HTTP sends.
	UserAgent string
	// HeaderPrefix names the signature headers (<prefix>-Signature, ...).
	HeaderPrefix string
	// OwnerSMTP is the operator's SMTP server and From address for owner
	// e-mails; nil when none is configured. It is trusted: no Guard.
	OwnerSMTP *channelconfig.Email
}

// Defaults for zero Options fields.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultHeaderPrefix = "Sundial"
	DefaultUserAgent    = "Sundial-Notifier/1"
)

// Sender sends messages. It is safe for concurrent use.
type Sender struct {
	opts      Options
	http      *http.Client
	transport *http.Transport
}

// New returns a Sender. Zero fields take the defaults above; a nil Guard
// refuses every internal destination (fail closed).
func New(opts Options) *Sender {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.HeaderPrefix == "" {
		opts.HeaderPrefix = DefaultHeaderPrefix
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	if opts.Guard == nil {
		opts.Guard = egress.NewGuard(false, nil)
	}
	transport := newTransport(opts)
	return &Sender{
		opts:      opts,
		transport: transport,
		http: &http.Client{
			Transport: transport,
			// A redirect is a failure: following it would send the alert
			// (signed, for a webhook) somewhere the user never named.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Close releases idle connections.
func (s *Sender) Close() { s.transport.CloseIdleConnections() }

// Send delivers m to t within Options.Timeout. Its error says in words what
// went wrong and never holds a secret (a chat URL's token, a password).
// When ctx ends first, the error wraps ctx.Err() (errors.Is): the try did
// not count.
func (s *Sender) Send(ctx context.Context, t Target, m message.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	switch t.Kind {
	case channelconfig.KindChat:
		err = s.sendChat(ctx, t, m)
	case channelconfig.KindWebhook:
		err = s.sendWebhook(ctx, t, m)
	case channelconfig.KindEmail:
		err = s.sendEmail(ctx, t, m)
	case KindOwners:
		err = s.sendOwners(ctx, t, m)
	default:
		err = fmt.Errorf("unknown channel type %q", t.Kind)
	}
	if err != nil && ctx.Err() != nil {
		// Stopped rather than failed: errors.Is tells the caller, which
		// hands the send back instead of recording a failure, while the
		// words stay those of the failure.
		return &stoppedError{words: err.Error(), cause: ctx.Err()}
	}
	return err
}

// stoppedError is a send cut short because its context ended.
type stoppedError struct {
	words string
	cause error
}

func (e *stoppedError) Error() string { return e.words }
func (e *stoppedError) Unwrap() error { return e.cause }

// config decodes and checks a channel's stored config. Its error names the
// field but never the value (a URL may hold a token).
func config[T any](t Target) (T, error) {
	var zero T
	parsed, err := channelconfig.Parse(t.Kind, t.Config)
	if err != nil {
		var fe *channelconfig.FieldError
		if errors.As(err, &fe) {
			return zero, fmt.Errorf("invalid channel config: %s", fe.Field+": "+fe.Message)
		}
		return zero, errors.New("invalid channel config")
	}
	c, ok := parsed.(T)
	if !ok {
		return zero, errors.New("invalid channel config")
	}
	return c, nil
}

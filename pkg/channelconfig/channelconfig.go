// Package channelconfig defines the stored settings of a notification
// channel (the config column of notification_channels): what the gateway
// checks when a channel is created or changed and what the notifier reads
// when it sends. Both services need the same shape and the same rules, so
// they live here once.
package channelconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"strings"
)

// Kinds of channel.
const (
	KindChat    = "chat"
	KindWebhook = "webhook"
	KindEmail   = "email"
)

// Alert kinds a channel can subscribe to.
const (
	EventHookFailed        = "hook.failed"
	EventEndpointRecovered = "endpoint.recovered"
	EventEndpointPaused    = "endpoint.paused"
	EventQuotaThreshold    = "quota.threshold"
)

// Events lists every alert kind a channel can subscribe to; a new channel
// subscribes to all of them.
var Events = []string{EventHookFailed, EventEndpointRecovered, EventEndpointPaused, EventQuotaThreshold}

// TLS policies of an e-mail channel.
const (
	// TLSStartTLS upgrades a plain connection with STARTTLS and refuses a
	// server that does not offer it (port 587 as a rule).
	TLSStartTLS = "starttls"
	// TLSImplicit speaks TLS from the first byte (port 465 as a rule).
	TLSImplicit = "tls"
	// TLSNone sends in the clear; credentials are then refused, so that a
	// password never crosses the network unencrypted.
	TLSNone = "none"
)

// Limits.
const (
	MaxURLLength   = 2048
	MaxRecipients  = 20
	MaxHostLength  = 253
	MaxFieldLength = 512
)

// Chat is a Slack-compatible incoming webhook. Its URL carries a token, so
// it is a secret: the API shows only Redacted(URL).
type Chat struct {
	URL string `json:"url"`
}

// Webhook is a custom webhook: a versioned JSON document POSTed to URL,
// signed like deliveries.
type Webhook struct {
	URL string `json:"url"`
}

// Email is an SMTP server and the addresses to write to. Password is a
// secret: the API never shows it.
type Email struct {
	Host     string   `json:"host"`
	Port     int      `json:"port"`
	Username string   `json:"username,omitempty"`
	Password string   `json:"password,omitempty"`
	TLS      string   `json:"tls"`
	From     string   `json:"from"`
	To       []string `json:"to"`
}

// FieldError names the field of a config that is wrong, as the API's
// error details do ("url", "email.port", "email.to[1]").
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Parse decodes the stored config of a channel of kind and checks it. It
// returns a Chat, Webhook or Email value (not a pointer).
func Parse(kind string, raw json.RawMessage) (any, error) {
	switch kind {
	case KindChat:
		var c Chat
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fmt.Errorf("chat config: %w", err)
		}
		return c, c.Validate()
	case KindWebhook:
		var w Webhook
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, fmt.Errorf("webhook config: %w", err)
		}
		return w, w.Validate()
	case KindEmail:
		var e Email
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("email config: %w", err)
		}
		return e, e.Validate()
	default:
		return nil, &FieldError{Field: "type", Message: fmt.Sprintf("unknown channel type %q", kind)}
	}
}

// Validate checks a chat channel.
func (c Chat) Validate() error { return checkURL("url", c.URL) }

// Validate checks a custom webhook channel.
func (w Webhook) Validate() error { return checkURL("url", w.URL) }

// Validate checks an e-mail channel and returns every problem, each a
// *FieldError.
func (e Email) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: "email." + field, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case e.Host == "":
		bad("host", "is required")
	case !validHost(e.Host):
		bad("host", "must be a host name or IP address")
	}
	if e.Port < 1 || e.Port > 65535 {
		bad("port", "must be 1 to 65535")
	}
	switch e.TLS {
	case TLSStartTLS, TLSImplicit:
	case TLSNone:
		if e.Username != "" || e.Password != "" {
			bad("tls", `"none" cannot be used with a username or password: credentials are never sent unencrypted`)
		}
	default:
		bad("tls", `must be "starttls", "tls" or "none"`)
	}
	if len(e.Username) > MaxFieldLength || strings.ContainsAny(e.Username, "\r\n") {
		bad("username", "must be at most %d characters, on one line", MaxFieldLength)
	}
	if len(e.Password) > MaxFieldLength || strings.ContainsAny(e.Password, "\r\n") {
		bad("password", "must be at most %d characters, on one line", MaxFieldLength)
	}
	if (e.Username == "") != (e.Password == "") {
		bad("password", "username and password go together")
	}
	if err := CheckAddress(e.From); err != nil {
		bad("from", "%v", err)
	}
	if len(e.To) == 0 || len(e.To) > MaxRecipients {
		bad("to", "must list 1 to %d addresses", MaxRecipients)
	}
	for i, to := range e.To {
		if err := CheckAddress(to); err != nil {
			bad(fmt.Sprintf("to[%d]", i), "%v", err)
		}
	}
	return errors.Join(errs...)
}

// validHost accepts a host name or an IP address (IPv6 without brackets:
// the port is a field of its own), nothing that could smuggle a port, a
// path, credentials or a line break into the address dialled.
func validHost(host string) bool {
	if len(host) > MaxHostLength {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return !strings.Contains(host, "%") // no zone: it names a local interface
	}
	for _, r := range host {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("/:@[]\\?#%", r) {
			return false
		}
	}
	return true
}

// CheckAddress accepts a bare e-mail address (no display name), the form
// SMTP's MAIL FROM and RCPT TO take.
func CheckAddress(addr string) error {
	if addr == "" {
		return errors.New("is required")
	}
	if len(addr) > 254 || strings.ContainsAny(addr, "\r\n<> ") {
		return fmt.Errorf("%q is not an e-mail address", addr)
	}
	parsed, err := mail.ParseAddress(addr)
	if err != nil || parsed.Address != addr || parsed.Name != "" {
		return fmt.Errorf("%q is not an e-mail address", addr)
	}
	return nil
}

// checkURL accepts an absolute https URL without credentials or fragment.
// Plain http is refused: alerts name projects, hooks and errors.
func checkURL(field, raw string) error {
	if raw == "" {
		return &FieldError{Field: field, Message: "is required"}
	}
	if len(raw) > MaxURLLength {
		return &FieldError{Field: field, Message: fmt.Sprintf("must be at most %d characters", MaxURLLength)}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Hostname() == "" || u.Opaque != "" {
		return &FieldError{Field: field, Message: "must be an absolute https URL"}
	}
	if u.Scheme != "https" {
		return &FieldError{Field: field, Message: "must use https"}
	}
	if u.User != nil {
		return &FieldError{Field: field, Message: "must not contain credentials"}
	}
	if u.Fragment != "" {
		return &FieldError{Field: field, Message: "must not contain a fragment"}
	}
	return nil
}

// Redacted shows a secret URL without its secret: scheme and host, then
// "/…" when there was more. It is what the API shows of a chat URL and what
// errors and logs may name.
func Redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "…"
	}
	out := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		out += "/…"
	}
	return out
}

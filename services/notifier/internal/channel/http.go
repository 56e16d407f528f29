package channel

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/signing"
	"github.com/sundial-run/sundial/services/notifier/internal/message"
)

// Bounds on reading an answer: the start of its body is kept for the
// error, a little more is drained so the connection can be reused, and a
// longer body costs a new connection rather than unbounded reading.
const (
	maxExcerpt = 4 << 10
	maxDrain   = 64 << 10
	// maxShownExcerpt is how much of the answer an error quotes.
	maxShownExcerpt = 100
)

// newTransport builds the HTTP transport for untrusted destinations, like
// deliveries': every connection passes the guard on the dialled address,
// no proxy, certificates verified.
func newTransport(opts Options) *http.Transport {
	dialer := &net.Dialer{
		Timeout:   opts.Timeout,
		KeepAlive: 30 * time.Second,
		Control:   opts.Guard.Control,
	}
	// HTTP/1.1 only and headers bounded, as deliveries: a channel's URL is
	// the customer's, so its answers are as untrusted as a receiver's
	// (docs/security.md, "One response, one delivery").
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	return &http.Transport{
		// Nil: HTTPS_PROXY would route sends around the egress guard.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		Protocols:              &protocols,
		MaxResponseHeaderBytes: egress.MaxResponseHeaderBytes,
		TLSClientConfig:        &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    opts.Timeout,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true,
	}
}

func (s *Sender) sendChat(ctx context.Context, t Target, m message.Message) error {
	cfg, err := config[channelconfig.Chat](t)
	if err != nil {
		return err
	}
	body, err := m.Chat()
	if err != nil {
		return err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", s.opts.UserAgent)
	return s.post(ctx, cfg.URL, body, h)
}

func (s *Sender) sendWebhook(ctx context.Context, t Target, m message.Message) error {
	cfg, err := config[channelconfig.Webhook](t)
	if err != nil {
		return err
	}
	if len(t.SigningKeys) == 0 {
		return errors.New("the project has no signing key")
	}
	body, err := m.Webhook()
	if err != nil {
		return err
	}
	// Signed at send time, like a delivery: receivers check the age.
	ts := time.Now().Unix()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", s.opts.UserAgent)
	signing.NewHeaders(s.opts.HeaderPrefix).Set(h, m.GroupID.String(), t.SigningKeys, ts, body)
	return s.post(ctx, cfg.URL, body, h)
}

// post sends body to rawURL and succeeds on a 2xx answer. Errors name the
// destination only as channelconfig.Redacted shows it.
func (s *Sender) post(ctx context.Context, rawURL string, body []byte, h http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return errors.New("invalid URL")
	}
	req.Header = h
	resp, err := s.http.Do(req)
	if err != nil {
		return errors.New(describe(err, s.opts.Timeout))
	}
	// A 2xx counts even if its body is then cut short: the receiver has
	// the alert. Read errors only shorten the quote of a failure.
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, maxExcerpt))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errors.New(statusError(resp, rawURL, excerpt))
	}
	return nil
}

// statusError describes a non-2xx answer: "HTTP 404 from
// https://hooks.slack.com/…: no_service". Slack and its kin say in the body
// what is wrong; the body is quoted short, on one line, without the URL.
func statusError(resp *http.Response, rawURL string, body []byte) string {
	msg := "HTTP " + strconv.Itoa(resp.StatusCode) + " from " + channelconfig.Redacted(rawURL)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return msg + " (redirects are not followed)"
	}
	if quoted := quote(body, rawURL); quoted != "" {
		msg += ": " + quoted
	}
	return msg
}

// quote is the start of an answer's body for an error: valid UTF-8, one
// line, and never repeating the URL's secret parts should the receiver
// echo them.
func quote(body []byte, rawURL string) string {
	s := oneLine(strings.ToValidUTF8(string(body), ""))
	if u, err := url.Parse(rawURL); err == nil {
		for _, secret := range []string{u.RawQuery, u.EscapedPath(), u.Path} {
			if len(secret) > 1 {
				s = strings.ReplaceAll(s, secret, "…")
			}
		}
	}
	if len(s) > maxShownExcerpt {
		cut := maxShownExcerpt
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

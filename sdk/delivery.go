package sundial

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Delivery is a hook as its receiver gets it, signature checked.
type Delivery struct {
	// ID is the hook's id: the same on every attempt, so deduplicate on it
	// (deliveries are at least once).
	ID   string `json:"id"`
	Path string `json:"path"`
	// PostAt is when the hook was due; PostedAt when this attempt was sent.
	PostAt    time.Time       `json:"postAt"`
	PostedAt  time.Time       `json:"postedAt"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	// AckURL and NackURL answer the delivery later when it was answered
	// 202 (see Accept and AsyncService). Keep them as secret as the
	// delivery: their token is their only credential.
	AckURL  string `json:"-"`
	NackURL string `json:"-"`
	// Header and Body are the request as received.
	Header http.Header `json:"-"`
	Body   []byte      `json:"-"`
}

// ErrBodyTooLarge is a body over the verifier's bound.
var ErrBodyTooLarge = errors.New("sundial: body too large")

// ParseDelivery reads r's body (at most DefaultMaxBodyBytes, or
// WithMaxBodyBytes), checks its signature with keys (see NewVerifier), and
// decodes it.
func ParseDelivery(r *http.Request, keys []string, opts ...VerifyOption) (*Delivery, error) {
	return NewVerifier(keys, opts...).ParseDelivery(r)
}

// ParseDelivery reads, checks and decodes a delivery (see the function
// ParseDelivery).
func (v *Verifier) ParseDelivery(r *http.Request) (*Delivery, error) {
	body, err := v.readVerified(r)
	if err != nil {
		return nil, err
	}
	d := &Delivery{Header: r.Header, Body: body}
	if err := json.Unmarshal(body, d); err != nil {
		return nil, fmt.Errorf("sundial: delivery body: %w", err)
	}
	d.AckURL = headerValue(r.Header, v.headers.ackURL)
	d.NackURL = headerValue(r.Header, v.headers.nackURL)
	return d, nil
}

func (v *Verifier) readVerified(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, v.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("sundial: read body: %w", err)
	}
	if int64(len(body)) > v.maxBody {
		return nil, fmt.Errorf("%w: over %d bytes", ErrBodyTooLarge, v.maxBody)
	}
	if err := v.Verify(r.Header, body); err != nil {
		return nil, err
	}
	return body, nil
}

// headerValue reads a header whether it arrived canonicalised (a Go server
// makes Sundial-Ack-URL into Sundial-Ack-Url) or as Sundial spells it (a
// header built by hand, in a test say).
func headerValue(h http.Header, name string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// AlertNotification is what a custom webhook channel receives: one alert
// message (an alert group). Fields may be added within version 1.
type AlertNotification struct {
	Version int `json:"version"`
	// ID is the group's id, the same on a repeated send.
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
	Project   struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"project"`
	Total        int                     `json:"total"`
	DashboardURL string                  `json:"dashboardUrl"`
	Alerts       []AlertNotificationItem `json:"alerts"`
}

// AlertNotificationItem is one alert of a notification; which fields are
// set depends on its kind.
type AlertNotificationItem struct {
	ID               string    `json:"id"`
	OccurredAt       time.Time `json:"occurredAt"`
	HookID           string    `json:"hookId,omitempty"`
	Domain           string    `json:"domain,omitempty"`
	Path             string    `json:"path,omitempty"`
	Error            string    `json:"error,omitempty"`
	Attempts         int       `json:"attempts,omitempty"`
	DashboardURL     string    `json:"dashboardUrl,omitempty"`
	ThresholdPercent int       `json:"thresholdPercent,omitempty"`
	Usage            int64     `json:"usage,omitempty"`
	Quota            int64     `json:"quota,omitempty"`
	PeriodStart      time.Time `json:"periodStart,omitzero"`
	PausedUntil      time.Time `json:"pausedUntil,omitzero"`
	// FailureClass is a hook.failed alert's last failure class, or the
	// class whose failure policy paused an endpoint.paused alert's
	// endpoint ("410", "5xx", ...).
	FailureClass string `json:"failureClass,omitempty"`
}

// ParseAlert reads, checks and decodes what a custom webhook channel
// receives (the alertNotification webhook of the API): it is signed like a
// delivery, with Sundial's headers.
func ParseAlert(r *http.Request, keys []string, opts ...VerifyOption) (*AlertNotification, error) {
	v := NewVerifier(keys, opts...)
	body, err := v.readVerified(r)
	if err != nil {
		return nil, err
	}
	var n AlertNotification
	if err := json.Unmarshal(body, &n); err != nil {
		return nil, fmt.Errorf("sundial: alert notification body: %w", err)
	}
	return &n, nil
}

package sundial

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// The channel types.
const (
	ChannelTypeChat    = "chat"
	ChannelTypeWebhook = "webhook"
	ChannelTypeEmail   = "email"
)

// The alert kinds a channel may subscribe to.
const (
	EventHookFailed        = "hook.failed"
	EventEndpointRecovered = "endpoint.recovered"
	EventEndpointPaused    = "endpoint.paused"
	EventQuotaThreshold    = "quota.threshold"
)

// Channel is where the project's alerts go.
type Channel struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Events  []string `json:"events"`
	Enabled bool     `json:"enabled"`
	// URL of a chat or webhook channel; a chat URL shows only its host.
	URL       string        `json:"url,omitempty"`
	Email     *ChannelEmail `json:"email,omitempty"`
	Health    ChannelHealth `json:"health"`
	CreatedAt time.Time     `json:"createdAt"`
	UpdatedAt time.Time     `json:"updatedAt"`
}

// ChannelEmail is an e-mail channel's settings as shown (no password).
type ChannelEmail struct {
	Host        string   `json:"host"`
	Port        int      `json:"port"`
	Username    string   `json:"username"`
	PasswordSet bool     `json:"passwordSet"`
	TLS         string   `json:"tls"`
	From        string   `json:"from"`
	To          []string `json:"to"`
}

// ChannelHealth is what the notifier recorded of a channel's tries.
type ChannelHealth struct {
	// Status is "ok", "failing" or "untested".
	Status              string    `json:"status"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	LastError           string    `json:"lastError,omitempty"`
	LastFailureAt       time.Time `json:"lastFailureAt,omitzero"`
	LastSuccessAt       time.Time `json:"lastSuccessAt,omitzero"`
}

// ChannelEmailSettings is an e-mail channel's SMTP server and addresses.
// In a change, only the fields set change; SetNull on Username and
// Password removes the credentials.
type ChannelEmailSettings struct {
	Host     string           `json:"host,omitempty"`
	Port     int              `json:"port,omitempty"`
	Username Nullable[string] `json:"username,omitzero"`
	Password Nullable[string] `json:"password,omitzero"`
	// TLS is "starttls", "tls" or "none".
	TLS  string   `json:"tls,omitempty"`
	From string   `json:"from,omitempty"`
	To   []string `json:"to,omitzero"`
}

// CreateChannelRequest is a new channel: URL for chat and webhook, Email
// for email.
type CreateChannelRequest struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Events are the alert kinds it gets; nil: the server's default.
	Events []string `json:"events,omitzero"`
	// Enabled defaults to true when nil.
	Enabled *bool                 `json:"enabled,omitempty"`
	URL     string                `json:"url,omitempty"`
	Email   *ChannelEmailSettings `json:"email,omitempty"`
}

// ChannelPatch changes the fields set; secrets left out keep their value.
type ChannelPatch struct {
	Name    *string               `json:"name,omitempty"`
	Events  []string              `json:"events,omitzero"`
	Enabled *bool                 `json:"enabled,omitempty"`
	URL     *string               `json:"url,omitempty"`
	Email   *ChannelEmailSettings `json:"email,omitempty"`
}

// ChannelSend is one try of one message on a channel.
type ChannelSend struct {
	GroupID         string    `json:"groupId"`
	Kind            string    `json:"kind"`
	Attempt         int       `json:"attempt"`
	StartedAt       time.Time `json:"startedAt"`
	DurationSeconds float64   `json:"durationSeconds"`
	// Outcome is "sent" or "failed".
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// ChannelTestResult is the first try of a test message: Outcome "sent",
// "failed", or "pending" (no try finished within 10 s; AlertID names it).
type ChannelTestResult struct {
	Outcome         string  `json:"outcome"`
	DurationSeconds float64 `json:"durationSeconds,omitempty"`
	Error           string  `json:"error,omitempty"`
	AlertID         string  `json:"alertId,omitempty"`
}

// ChannelService is the notification channels part of the API.
type ChannelService struct{ c *Client }

// channel sends a call on one channel's path (plus rest) and returns the
// answer's data.
func channel[T any](ctx context.Context, s *ChannelService, cl call, id, rest string) (T, error) {
	p, err := pathOf("/channels", "id", id)
	if err != nil {
		var zero T
		return zero, err
	}
	cl.path = p + rest
	return get[T](ctx, s.c, cl)
}

// List returns the project's channels, newest first (GET /v1/channels).
func (s *ChannelService) List(ctx context.Context) ([]Channel, error) {
	return get[[]Channel](ctx, s.c, call{method: "GET", path: "/channels"})
}

// Create makes a channel (POST /v1/channels).
func (s *ChannelService) Create(ctx context.Context, req CreateChannelRequest) (Channel, error) {
	return get[Channel](ctx, s.c, call{method: "POST", path: "/channels", body: req})
}

// Get returns one channel (GET /v1/channels/{id}).
func (s *ChannelService) Get(ctx context.Context, id string) (Channel, error) {
	return channel[Channel](ctx, s, call{method: "GET"}, id, "")
}

// Update changes the fields set in p (PATCH /v1/channels/{id}).
func (s *ChannelService) Update(ctx context.Context, id string, p ChannelPatch) (Channel, error) {
	return channel[Channel](ctx, s, call{method: "PATCH", body: p}, id, "")
}

// Delete deletes a channel (DELETE /v1/channels/{id}).
func (s *ChannelService) Delete(ctx context.Context, id string) error {
	_, err := channel[struct{}](ctx, s, call{method: "DELETE"}, id, "")
	return err
}

// Sends lists the channel's latest send attempts, newest first; limit is
// 1 to 200, 0 for the server's default (GET /v1/channels/{id}/sends).
func (s *ChannelService) Sends(ctx context.Context, id string, limit int) ([]ChannelSend, error) {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return channel[[]ChannelSend](ctx, s, call{method: "GET", query: q}, id, "/sends")
}

// Test sends a test message to the channel and waits up to 10 s for its
// first try (POST /v1/channels/{id}/test). Each call sends one more.
func (s *ChannelService) Test(ctx context.Context, id string) (ChannelTestResult, error) {
	return channel[ChannelTestResult](ctx, s, call{method: "POST"}, id, "/test")
}

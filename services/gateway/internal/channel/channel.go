// Package channel manages a project's notification channels (chat, custom
// webhook, e-mail: docs/notifications.md): creating, listing, changing and
// deleting them, what the API shows of them (never a secret), the record
// of their sends, and the send test, which queues a channel.test alert and
// waits a bounded time for the notifier's first try.
package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Health statuses of a channel.
const (
	// HealthUntested: no send to the channel was ever tried.
	HealthUntested = "untested"
	// HealthFailing: the last try failed (and every one since the last
	// success); the notifier keeps retrying.
	HealthFailing = "failing"
	// HealthOK: the last try succeeded.
	HealthOK = "ok"
)

// ErrLimit refuses a channel past MaxPerProject.
var ErrLimit = fmt.Errorf("a project has at most %d channels: delete one first", MaxPerProject)

// Problem is one field at fault.
type Problem struct {
	Field   string
	Message string
}

// InvalidError lists every field at fault in a request.
type InvalidError struct {
	Problems []Problem
}

func (e *InvalidError) Error() string {
	p := e.Problems[0]
	if len(e.Problems) == 1 {
		return p.Field + ": " + p.Message
	}
	return fmt.Sprintf("%d fields are invalid, the first %s: %s", len(e.Problems), p.Field, p.Message)
}

// Health is what the notifier recorded of a channel's tries.
type Health struct {
	Status              string
	ConsecutiveFailures int
	LastError           *string
	LastFailureAt       *time.Time
	LastSuccessAt       *time.Time
}

// Email is what is shown of an e-mail channel: everything but the
// password, of which only whether one is set.
type Email struct {
	Host        string
	Port        int
	Username    string
	PasswordSet bool
	TLS         string
	From        string
	To          []string
}

// Channel is a channel as the API shows it. URL is a chat channel's URL
// redacted (channelconfig.Redacted: its path is a token) or a webhook
// channel's URL in full; Email is set for e-mail channels.
type Channel struct {
	ID        uuid.UUID
	Name      string
	Kind      string
	Events    []string
	Enabled   bool
	URL       string
	Email     *Email
	Health    Health
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Service manages channels.
type Service struct {
	pool *pgxpool.Pool
	pub  Publisher
	// keys seal and open the channels' configs, which hold secrets.
	keys *secretbox.Keyring
}

// NewService returns a Service on pool publishing send tests' alerts with
// pub, storing the channels' configs sealed with keys.
func NewService(pool *pgxpool.Pool, pub Publisher, keys *secretbox.Keyring) *Service {
	return &Service{pool: pool, pub: pub, keys: keys}
}

// Create checks and stores a new channel. A bad request is an
// *InvalidError; a project that has MaxPerProject channels already,
// ErrLimit.
func (s *Service) Create(ctx context.Context, projectID uuid.UUID, r CreateRequest) (Channel, error) {
	set, err := r.settings()
	if err != nil {
		return Channel{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Channel{}, fmt.Errorf("channel id: %w", err)
	}
	config, err := seal(s.keys, id, set.config)
	if err != nil {
		return Channel{}, err
	}
	var row store.NotificationChannel
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		// The project's row lock makes the count and the insert one step
		// for concurrent creations.
		if _, err := q.LockProjectChannels(ctx, projectID); err != nil {
			return fmt.Errorf("project %s: %w", projectID, postgres.Translate(err))
		}
		n, err := q.CountChannels(ctx, projectID)
		if err != nil {
			return fmt.Errorf("count channels: %w", err)
		}
		if n >= MaxPerProject {
			return ErrLimit
		}
		row, err = q.InsertChannel(ctx, store.InsertChannelParams{
			ID: id, ProjectID: projectID, Name: set.name, Kind: set.kind, ConfigSealed: config,
			Events: set.events, Enabled: set.enabled,
		})
		if err != nil {
			return fmt.Errorf("insert channel: %w", postgres.Translate(err))
		}
		return nil
	})
	if err != nil {
		return Channel{}, fmt.Errorf("create channel: %w", err)
	}
	return view(s.keys, row)
}

// List returns the project's channels, newest first.
func (s *Service) List(ctx context.Context, projectID uuid.UUID) ([]Channel, error) {
	rows, err := store.New(s.pool).ListChannels(ctx, store.ListChannelsParams{ProjectID: projectID, MaxRows: MaxPerProject})
	if err != nil {
		return nil, fmt.Errorf("list channels: %w", err)
	}
	out := make([]Channel, len(rows))
	for i, row := range rows {
		if out[i], err = view(s.keys, row); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Get returns one of the project's channels, or postgres.ErrNotFound.
func (s *Service) Get(ctx context.Context, projectID, id uuid.UUID) (Channel, error) {
	row, err := store.New(s.pool).GetChannel(ctx, store.GetChannelParams{ProjectID: projectID, ID: id})
	if err != nil {
		return Channel{}, fmt.Errorf("channel %s: %w", id, postgres.Translate(err))
	}
	return view(s.keys, row)
}

// Update merges r into the channel (postgres.ErrNotFound when the project
// has no such channel). The row is locked while r is merged into it, so
// that concurrent changes of different fields both take effect. A bad
// request is an *InvalidError, and nothing changes then.
func (s *Service) Update(ctx context.Context, projectID, id uuid.UUID, r *PatchRequest) (Channel, error) {
	var row store.NotificationChannel
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		row, err = update(ctx, store.New(tx), s.keys, projectID, id, r)
		return err
	})
	if err != nil {
		return Channel{}, fmt.Errorf("update channel: %w", err)
	}
	return view(s.keys, row)
}

func update(ctx context.Context, q *store.Queries, keys *secretbox.Keyring, projectID, id uuid.UUID, r *PatchRequest) (store.NotificationChannel, error) {
	cur, err := q.LockChannel(ctx, store.LockChannelParams{ProjectID: projectID, ID: id})
	if err != nil {
		return cur, fmt.Errorf("channel %s: %w", id, postgres.Translate(err))
	}
	stored, err := open(keys, cur)
	if err != nil {
		return cur, err
	}
	config, err := channelconfig.Parse(cur.Kind, stored)
	if err != nil {
		// The stored config was checked when it was written; a rule that
		// has grown stricter since is for this change to fix, so only a
		// config that cannot be read at all stops it.
		var fe *channelconfig.FieldError
		if !errors.As(err, &fe) {
			return cur, fmt.Errorf("stored config of channel %s: %w", id, err)
		}
	}
	next, err := r.apply(settings{name: cur.Name, kind: cur.Kind, events: cur.Events, enabled: cur.Enabled, config: config})
	if err != nil {
		return cur, err
	}
	sealed, err := seal(keys, id, next.config)
	if err != nil {
		return cur, err
	}
	row, err := q.UpdateChannel(ctx, store.UpdateChannelParams{
		ProjectID: projectID, ID: id, Name: next.name, ConfigSealed: sealed, Events: next.events, Enabled: next.enabled,
	})
	if err != nil {
		return cur, fmt.Errorf("store channel: %w", postgres.Translate(err))
	}
	return row, nil
}

// Delete deletes the channel, its sends and their record; an unknown id is
// postgres.ErrNotFound.
func (s *Service) Delete(ctx context.Context, projectID, id uuid.UUID) error {
	n, err := store.New(s.pool).DeleteChannel(ctx, store.DeleteChannelParams{ProjectID: projectID, ID: id})
	if err != nil {
		return fmt.Errorf("delete channel: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("channel %s: %w", id, postgres.ErrNotFound)
	}
	return nil
}

// seal encodes a channel's config and seals it for the channel's row.
func seal(keys *secretbox.Keyring, id uuid.UUID, config any) (string, error) {
	raw, err := json.Marshal(config)
	if err != nil {
		return "", fmt.Errorf("encode channel config: %w", err)
	}
	sealed, err := keys.Seal(secretbox.Label(secretbox.ChannelConfig, id), raw)
	if err != nil {
		return "", fmt.Errorf("channel %s config: %w", id, err)
	}
	return sealed, nil
}

// open returns a stored channel's config, which is sealed.
func open(keys *secretbox.Keyring, row store.NotificationChannel) (json.RawMessage, error) {
	raw, err := keys.Open(secretbox.Label(secretbox.ChannelConfig, row.ID), row.ConfigSealed)
	if err != nil {
		return nil, fmt.Errorf("stored config of channel %s: %w", row.ID, err)
	}
	return raw, nil
}

// view is what the API shows of a stored channel: never a secret.
func view(keys *secretbox.Keyring, row store.NotificationChannel) (Channel, error) {
	c := Channel{
		ID: row.ID, Name: row.Name, Kind: row.Kind, Events: row.Events, Enabled: row.Enabled,
		Health: health(row), CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
	if c.Events == nil {
		c.Events = []string{}
	}
	stored, err := open(keys, row)
	if err != nil {
		return Channel{}, err
	}
	config, err := channelconfig.Parse(row.Kind, stored)
	var fe *channelconfig.FieldError
	if err != nil && !errors.As(err, &fe) {
		return Channel{}, fmt.Errorf("stored config of channel %s: %w", row.ID, err)
	}
	switch cfg := config.(type) {
	case channelconfig.Chat:
		c.URL = channelconfig.Redacted(cfg.URL)
	case channelconfig.Webhook:
		c.URL = cfg.URL
	case channelconfig.Email:
		to := cfg.To
		if to == nil {
			to = []string{}
		}
		c.Email = &Email{
			Host: cfg.Host, Port: cfg.Port, Username: cfg.Username, PasswordSet: cfg.Password != "",
			TLS: cfg.TLS, From: cfg.From, To: to,
		}
	}
	return c, nil
}

// health derives the status from what the notifier recorded.
func health(row store.NotificationChannel) Health {
	h := Health{
		ConsecutiveFailures: int(row.ConsecutiveFailures), LastError: row.LastError,
		LastFailureAt: row.LastFailureAt, LastSuccessAt: row.LastSuccessAt,
	}
	switch {
	case row.LastSuccessAt == nil && row.LastFailureAt == nil:
		h.Status = HealthUntested
	case row.ConsecutiveFailures > 0:
		h.Status = HealthFailing
	default:
		h.Status = HealthOK
	}
	return h
}

package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/channel"
)

// Channels manages a project's notification channels (channel.Service).
type Channels interface {
	Create(ctx context.Context, projectID uuid.UUID, r channel.CreateRequest) (channel.Channel, error)
	List(ctx context.Context, projectID uuid.UUID) ([]channel.Channel, error)
	Get(ctx context.Context, projectID, id uuid.UUID) (channel.Channel, error)
	Update(ctx context.Context, projectID, id uuid.UUID, r *channel.PatchRequest) (channel.Channel, error)
	Delete(ctx context.Context, projectID, id uuid.UUID) error
	Sends(ctx context.Context, projectID, id uuid.UUID, limit int) ([]channel.Send, error)
	Test(ctx context.Context, projectID, id uuid.UUID, wait time.Duration) (channel.TestResult, error)
}

// ChannelDeps is what the channel operations need, set by app.New.
type ChannelDeps struct {
	Channels Channels
	// TestWait is how long a send test waits for the first try before it
	// answers 202 pending; zero means channel.DefaultTestWait. Tests
	// shorten it.
	TestWait time.Duration
}

// channelManagement serves /v1/channels.
type channelManagement struct {
	ChannelDeps
	log *slog.Logger
}

var errChannelNotFound = newError(http.StatusNotFound, CodeNotFound, "no such channel in this project")

// ListChannels lists the project's channels (GET /v1/channels).
func (m channelManagement) ListChannels(ctx context.Context, _ gen.ListChannelsRequestObject) (gen.ListChannelsResponseObject, error) {
	list, err := m.Channels.List(ctx, projectOf(ctx))
	if err != nil {
		return nil, internal(err)
	}
	data := make([]gen.Channel, len(list))
	for i, c := range list {
		data[i] = toChannel(c)
	}
	return gen.ListChannels200JSONResponse{Body: gen.ChannelListResponse{Data: data}}, nil
}

// CreateChannel creates a channel (POST /v1/channels).
func (m channelManagement) CreateChannel(ctx context.Context, req gen.CreateChannelRequestObject) (gen.CreateChannelResponseObject, error) {
	c, err := m.Channels.Create(ctx, projectOf(ctx), *req.Body)
	if err != nil {
		return nil, channelError(err)
	}
	return gen.CreateChannel201JSONResponse{Body: gen.ChannelResponse{Data: toChannel(c)}}, nil
}

// GetChannel returns a channel (GET /v1/channels/{id}).
func (m channelManagement) GetChannel(ctx context.Context, req gen.GetChannelRequestObject) (gen.GetChannelResponseObject, error) {
	id, err := uuid.Parse(req.Id)
	if err != nil {
		return nil, errChannelNotFound
	}
	c, err := m.Channels.Get(ctx, projectOf(ctx), id)
	if err != nil {
		return nil, channelError(err)
	}
	return gen.GetChannel200JSONResponse{ChannelSettingsJSONResponse: channelResponse(c)}, nil
}

// PatchChannel changes a channel (PATCH /v1/channels/{id}); the body was
// decoded strictly into channel.PatchRequest, which knows null from absent.
func (m channelManagement) PatchChannel(ctx context.Context, req gen.PatchChannelRequestObject) (gen.PatchChannelResponseObject, error) {
	id, err := uuid.Parse(req.Id)
	if err != nil {
		return nil, errChannelNotFound
	}
	c, err := m.Channels.Update(ctx, projectOf(ctx), id, req.Body)
	if err != nil {
		return nil, channelError(err)
	}
	return gen.PatchChannel200JSONResponse{ChannelSettingsJSONResponse: channelResponse(c)}, nil
}

// DeleteChannel deletes a channel (DELETE /v1/channels/{id}).
func (m channelManagement) DeleteChannel(ctx context.Context, req gen.DeleteChannelRequestObject) (gen.DeleteChannelResponseObject, error) {
	id, err := uuid.Parse(req.Id)
	if err != nil {
		return nil, errChannelNotFound
	}
	if err := m.Channels.Delete(ctx, projectOf(ctx), id); err != nil {
		return nil, channelError(err)
	}
	return gen.DeleteChannel204Response{}, nil
}

// ListChannelSends lists a channel's latest tries (GET
// /v1/channels/{id}/sends).
func (m channelManagement) ListChannelSends(ctx context.Context, req gen.ListChannelSendsRequestObject) (gen.ListChannelSendsResponseObject, error) {
	limit := channel.DefaultSendsLimit
	if l := req.Params.Limit; l != nil {
		if *l < 1 || *l > channel.MaxSendsLimit {
			return nil, invalid(Detail{Field: "limit", Message: "must be from 1 to 200"})
		}
		limit = *l
	}
	id, err := uuid.Parse(req.Id)
	if err != nil {
		return nil, errChannelNotFound
	}
	sends, err := m.Channels.Sends(ctx, projectOf(ctx), id, limit)
	if err != nil {
		return nil, channelError(err)
	}
	data := make([]gen.ChannelSend, len(sends))
	for i, s := range sends {
		data[i] = gen.ChannelSend{
			GroupId: s.GroupID, Kind: gen.ChannelSendKind(s.Kind), Attempt: s.Attempt, StartedAt: s.StartedAt.UTC(),
			DurationSeconds: s.DurationSeconds, Outcome: gen.ChannelSendOutcome(s.Outcome), Error: s.Error,
		}
	}
	return gen.ListChannelSends200JSONResponse{Body: gen.ChannelSendListResponse{Data: data}}, nil
}

// TestChannel queues a test message and waits a bounded time for its first
// try (POST /v1/channels/{id}/test): 200 with its outcome, or 202 pending.
func (m channelManagement) TestChannel(ctx context.Context, req gen.TestChannelRequestObject) (gen.TestChannelResponseObject, error) {
	id, err := uuid.Parse(req.Id)
	if err != nil {
		return nil, errChannelNotFound
	}
	wait := m.TestWait
	if wait <= 0 {
		wait = channel.DefaultTestWait
	}
	res, err := m.Channels.Test(ctx, projectOf(ctx), id, wait)
	if err != nil {
		return nil, channelError(err)
	}
	if !res.Published {
		// Not the user's problem: the alert is stored, and the notifier's
		// sweeper takes it in without its event.
		m.log.WarnContext(ctx, "send test event not published", "alert_id", res.AlertID, "channel_id", id, "err", res.PublishErr)
	}
	if res.Outcome == channel.OutcomePending {
		return gen.TestChannel202JSONResponse{Body: gen.ChannelTestResponse{Data: gen.ChannelTestResult{
			Outcome: gen.ChannelTestResultOutcome(res.Outcome), AlertId: &res.AlertID,
		}}}, nil
	}
	result := gen.ChannelTestResult{Outcome: gen.ChannelTestResultOutcome(res.Outcome), DurationSeconds: &res.DurationSeconds}
	if res.Error != "" {
		result.Error = &res.Error
	}
	return gen.TestChannel200JSONResponse{Body: gen.ChannelTestResponse{Data: result}}, nil
}

// channelError maps the channel package's errors to responses.
func channelError(err error) error {
	var bad *channel.InvalidError
	switch {
	case errors.As(err, &bad):
		details := make([]Detail, len(bad.Problems))
		for i, p := range bad.Problems {
			details[i] = Detail{Field: p.Field, Message: p.Message}
		}
		return invalid(details...)
	case errors.Is(err, channel.ErrLimit):
		return newError(http.StatusConflict, CodeConflict, channel.ErrLimit.Error())
	case errors.Is(err, postgres.ErrNotFound):
		return errChannelNotFound
	default:
		return internal(err)
	}
}

func channelResponse(c channel.Channel) gen.ChannelSettingsJSONResponse {
	return gen.ChannelSettingsJSONResponse{Body: gen.ChannelResponse{Data: toChannel(c)}}
}

// toChannel is the Channel resource: secrets were left out by package
// channel already.
func toChannel(c channel.Channel) gen.Channel {
	events := make([]gen.AlertEvent, len(c.Events))
	for i, e := range c.Events {
		events[i] = gen.AlertEvent(e)
	}
	out := gen.Channel{
		Id: c.ID, Name: c.Name, Type: gen.ChannelType(c.Kind), Events: events, Enabled: c.Enabled,
		Health: gen.ChannelHealth{
			Status:              gen.ChannelHealthStatus(c.Health.Status),
			ConsecutiveFailures: c.Health.ConsecutiveFailures,
			LastError:           c.Health.LastError,
			LastFailureAt:       utc(c.Health.LastFailureAt),
			LastSuccessAt:       utc(c.Health.LastSuccessAt),
		},
		CreatedAt: c.CreatedAt.UTC(),
		UpdatedAt: c.UpdatedAt.UTC(),
	}
	if c.URL != "" {
		out.Url = &c.URL
	}
	if e := c.Email; e != nil {
		to := make([]string, len(e.To))
		copy(to, e.To)
		out.Email = &gen.ChannelEmail{
			Host: e.Host, Port: e.Port, Username: e.Username, PasswordSet: e.PasswordSet,
			Tls: gen.ChannelEmailTls(e.TLS), From: e.From, To: to,
		}
	}
	return out
}

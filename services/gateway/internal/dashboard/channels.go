package dashboard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/channel"
)

// ChannelManager creates, reads and changes channels, lists their sends,
// and runs send tests (*channel.Service, as the API's /v1/channels).
type ChannelManager interface {
	Create(ctx context.Context, projectID uuid.UUID, r channel.CreateRequest) (channel.Channel, error)
	Get(ctx context.Context, projectID, id uuid.UUID) (channel.Channel, error)
	Update(ctx context.Context, projectID, id uuid.UUID, r *channel.PatchRequest) (channel.Channel, error)
	List(ctx context.Context, projectID uuid.UUID) ([]channel.Channel, error)
	Sends(ctx context.Context, projectID, id uuid.UUID, limit int) ([]channel.Send, error)
	Test(ctx context.Context, projectID, id uuid.UUID, wait time.Duration) (channel.TestResult, error)
}

// channelSendsShown is how many recent sends of each channel the page
// shows and counts.
const channelSendsShown = 10

// channelsPage is the data of channels.html.
type channelsPage struct {
	Channels []channelView
	// Tested is the channel of the send test this page answers, and
	// Result its outcome.
	Tested uuid.UUID
	Result *channel.TestResult
}

// channelView is a channel, without its URL or e-mail settings (a chat
// URL's path is a token), and its recent sends.
type channelView struct {
	channel.Channel
	Sends        []channel.Send
	Sent, Failed int
}

// channels is GET /dashboard/p/{project}/channels.
func (d *Dashboard) channels(w http.ResponseWriter, r *http.Request) {
	d.renderChannels(w, r, channelsPage{})
}

func (d *Dashboard) renderChannels(w http.ResponseWriter, r *http.Request, page channelsPage) {
	p, _ := ProjectFrom(r)
	list, err := d.Admin.Channels.List(r.Context(), p.ID)
	if err != nil {
		d.fault(w, r, "list channels", err)
		return
	}
	for _, c := range list {
		sends, err := d.Admin.Channels.Sends(r.Context(), p.ID, c.ID, channelSendsShown)
		if err != nil && !errors.Is(err, postgres.ErrNotFound) { // deleted meanwhile
			d.fault(w, r, "channel sends", err)
			return
		}
		v := channelView{Channel: c, Sends: sends}
		for _, s := range sends {
			switch s.Outcome {
			case channel.OutcomeSent:
				v.Sent++
			case channel.OutcomeFailed:
				v.Failed++
			}
		}
		page.Channels = append(page.Channels, v)
	}
	Render(w, r, "channels.html", page)
}

// testChannel is POST /dashboard/p/{project}/channels/{id}/test (members
// and owners): the API's send test, waiting as long for the first try.
func (d *Dashboard) testChannel(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		Error(w, r, http.StatusNotFound, "There is no such channel in this project.")
		return
	}
	wait := d.Admin.ChannelTestWait
	if wait <= 0 {
		wait = channel.DefaultTestWait
	}
	res, err := d.Admin.Channels.Test(r.Context(), p.ID, id, wait)
	switch {
	case errors.Is(err, postgres.ErrNotFound):
		Error(w, r, http.StatusNotFound, "There is no such channel in this project.")
		return
	case err != nil:
		d.fault(w, r, "channel send test", err)
		return
	}
	if !res.Published {
		d.Log.Warn("send test event not published", "alert_id", res.AlertID, "channel_id", id, "err", res.PublishErr)
	}
	d.Log.Info("dashboard channel send test", "project_id", p.ID, "channel_id", id, "outcome", res.Outcome, "user_id", sessionFrom(r).user.ID)
	d.renderChannels(w, r, channelsPage{Tested: id, Result: &res})
}

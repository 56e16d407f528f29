package dashboard

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/channel"
)

// channelFormFields are the fields of channel-form.html that problems are
// shown next to, named as the API's.
var channelFormFields = []string{
	"name", "type", "events", "enabled", "url", "email", "email.host", "email.port", "email.username",
	"email.password", "email.tls", "email.from", "email.to",
}

// channelForm is the data of channel-form.html: the form's values as
// given, and its problems by field. Secrets are never in it: the password
// and a chat URL are write-only, and the form says only whether one is set
// (the chat URL redacted, as the API shows it).
type channelForm struct {
	// ID is the channel edited, nil for a new one; its type is then fixed.
	ID                                  *uuid.UUID
	Name, Type, URL                     string
	Events                              []string
	Enabled                             bool
	Host, Port, Username, TLS, From, To string
	// CurrentURL is the URL as the API shows it; PasswordSet says whether
	// an e-mail channel has a password.
	CurrentURL                 string
	PasswordSet                bool
	Errors                     formProblems
	AllEvents, Types, TLSModes []string
}

// Subscribed says whether the form subscribes to event.
func (f channelForm) Subscribed(event string) bool { return slices.Contains(f.Events, event) }

// newChannelForm is GET /dashboard/p/{project}/channels/new: every event,
// enabled, as a channel the API creates without them.
func (d *Dashboard) newChannelForm(w http.ResponseWriter, r *http.Request) {
	renderChannelForm(w, r, http.StatusOK, channelForm{
		Type: channelconfig.KindWebhook, Events: channelconfig.Events, Enabled: true,
		Port: "587", TLS: channelconfig.TLSStartTLS,
	})
}

// editChannelForm is GET /dashboard/p/{project}/channels/{id}/edit.
func (d *Dashboard) editChannelForm(w http.ResponseWriter, r *http.Request) {
	c, ok := d.ownChannel(w, r)
	if !ok {
		return
	}
	renderChannelForm(w, r, http.StatusOK, channelFormOf(c))
}

func renderChannelForm(w http.ResponseWriter, r *http.Request, status int, f channelForm) {
	f.AllEvents = channelconfig.Events
	f.Types = []string{channelconfig.KindWebhook, channelconfig.KindChat, channelconfig.KindEmail}
	f.TLSModes = []string{channelconfig.TLSStartTLS, channelconfig.TLSImplicit, channelconfig.TLSNone}
	RenderStatus(w, r, status, "channel-form.html", f)
}

// channelFormOf is the form of a stored channel, as the API shows it.
func channelFormOf(c channel.Channel) channelForm {
	f := channelForm{ID: &c.ID, Name: c.Name, Type: c.Kind, Events: c.Events, Enabled: c.Enabled, CurrentURL: c.URL}
	if c.Kind == channelconfig.KindWebhook {
		f.URL = c.URL // the API shows it in full
	}
	if e := c.Email; e != nil {
		f.Host, f.Port, f.Username, f.TLS, f.From = e.Host, strconv.Itoa(e.Port), e.Username, e.TLS, e.From
		f.To, f.PasswordSet = strings.Join(e.To, " "), e.PasswordSet
	}
	return f
}

// createChannel is POST /dashboard/p/{project}/channels (members and
// owners): the form as a POST /v1/channels body, checked and stored by
// channel.Service.Create; then 303 to the channels.
func (d *Dashboard) createChannel(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	f := readChannelForm(r)
	f.Type = strings.TrimSpace(r.PostFormValue("type"))
	problems := formProblems{}
	req := channel.CreateRequest{Name: &f.Name, Type: &f.Type, Events: &f.Events, Enabled: &f.Enabled}
	switch f.Type {
	case channelconfig.KindChat, channelconfig.KindWebhook:
		req.URL = &f.URL
	case channelconfig.KindEmail:
		req.Email = f.email(problems, r.PostFormValue("email.password"), false)
	}
	if len(problems) > 0 {
		d.channelSaved(w, r, f, problems, channel.Channel{}, nil)
		return
	}
	c, err := d.Admin.Channels.Create(r.Context(), p.ID, req)
	d.channelSaved(w, r, f, problems, c, err)
}

// updateChannel is POST /dashboard/p/{project}/channels/{id} (members and
// owners): the form as a PATCH /v1/channels/{id} body, merged by
// channel.Service.Update. An empty URL or password keeps the one stored;
// the box removes the username and password.
func (d *Dashboard) updateChannel(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	cur, ok := d.ownChannel(w, r)
	if !ok {
		return
	}
	f := readChannelForm(r)
	f.ID, f.Type, f.CurrentURL, f.PasswordSet = &cur.ID, cur.Kind, cur.URL, cur.Email != nil && cur.Email.PasswordSet
	problems := formProblems{}
	req := &channel.PatchRequest{Name: &f.Name, Events: &f.Events, Enabled: &f.Enabled}
	switch f.Type {
	case channelconfig.KindChat, channelconfig.KindWebhook:
		if f.URL != "" {
			req.URL = &f.URL
		}
	case channelconfig.KindEmail:
		req.Email = f.email(problems, r.PostFormValue("email.password"), r.PostFormValue("email.clearCredentials") == "on")
	}
	if len(problems) > 0 {
		d.channelSaved(w, r, f, problems, channel.Channel{}, nil)
		return
	}
	c, err := d.Admin.Channels.Update(r.Context(), p.ID, cur.ID, req)
	d.channelSaved(w, r, f, problems, c, err)
}

// channelSaved answers a create or update: with problems of the form's
// own reading (the service was not asked) or the service's refusal, the
// form again with the problems by field; else 303 to the channels.
func (d *Dashboard) channelSaved(w http.ResponseWriter, r *http.Request, f channelForm, problems formProblems, c channel.Channel, err error) {
	p, _ := ProjectFrom(r)
	refuse := func(status int, service formProblems) {
		f.Errors = problems.merge(service)
		switch {
		case f.Type != channelconfig.KindWebhook:
			f.URL = "" // a chat URL is a secret: typed again
		case f.URL == "":
			f.URL = f.CurrentURL
		}
		renderChannelForm(w, r, status, f)
	}
	var invalid *channel.InvalidError
	switch {
	case len(problems) > 0:
		refuse(http.StatusBadRequest, nil)
	case errors.As(err, &invalid):
		service := formProblems{}
		for _, pr := range invalid.Problems {
			service.place(channelFormFields, pr.Field, pr.Message)
		}
		refuse(http.StatusBadRequest, service)
	case errors.Is(err, channel.ErrLimit):
		refuse(http.StatusConflict, formProblems{"": channel.ErrLimit.Error()})
	case errors.Is(err, postgres.ErrNotFound):
		Error(w, r, http.StatusNotFound, "There is no such channel in this project.")
	case err != nil:
		d.fault(w, r, "save channel", err)
	default:
		d.Log.Info("dashboard channel saved", "project_id", p.ID, "channel_id", c.ID, "user_id", sessionFrom(r).user.ID)
		http.Redirect(w, r, Prefix+"/p/"+p.ID.String()+"/channels#channel-"+c.ID.String(), http.StatusSeeOther)
	}
}

// ownChannel reads the channel of the route's {id} in the request's
// project, answering 404 when there is none: before the form is read, so
// that another project's channel is not found whatever the form says.
func (d *Dashboard) ownChannel(w http.ResponseWriter, r *http.Request) (channel.Channel, bool) {
	p, _ := ProjectFrom(r)
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		Error(w, r, http.StatusNotFound, "There is no such channel in this project.")
		return channel.Channel{}, false
	}
	c, err := d.Admin.Channels.Get(r.Context(), p.ID, id)
	switch {
	case errors.Is(err, postgres.ErrNotFound):
		Error(w, r, http.StatusNotFound, "There is no such channel in this project.")
		return channel.Channel{}, false
	case err != nil:
		d.fault(w, r, "get channel", err)
		return channel.Channel{}, false
	}
	return c, true
}

func readChannelForm(r *http.Request) channelForm {
	_ = r.ParseForm() // checkCSRF parsed it
	v := func(name string) string { return strings.TrimSpace(r.PostFormValue(name)) }
	return channelForm{
		Name: v("name"), URL: v("url"), Events: append([]string{}, r.PostForm["events"]...), Enabled: r.PostFormValue("enabled") == "on",
		Host: v("email.host"), Port: v("email.port"), Username: v("email.username"), TLS: v("email.tls"),
		From: v("email.from"), To: v("email.to"),
	}
}

// email is the form's e-mail settings as a request's email member. An
// empty password is none (a creation) or the stored one (a change); clear
// removes the username and password. The password is never kept in the
// form shown again.
func (f channelForm) email(problems formProblems, password string, clear bool) *channel.EmailRequest {
	to := words(f.To)
	e := &channel.EmailRequest{
		Host: &f.Host, TLS: &f.TLS, From: &f.From, To: &to,
		Port: problems.integer(channelFormFields, "email.port", f.Port),
	}
	if clear {
		none := ""
		e.Username, e.Password = &none, &none
		return e
	}
	if f.Username != "" || f.ID != nil {
		e.Username = &f.Username
	}
	if password != "" {
		e.Password = &password
	}
	return e
}

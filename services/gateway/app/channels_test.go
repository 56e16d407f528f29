package app_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// channelJSON is the Channel resource, decoded strictly.
type channelJSON struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Events  []string `json:"events"`
	Enabled bool     `json:"enabled"`
	URL     string   `json:"url"`
	Email   *struct {
		Host        string   `json:"host"`
		Port        int      `json:"port"`
		Username    string   `json:"username"`
		PasswordSet bool     `json:"passwordSet"`
		TLS         string   `json:"tls"`
		From        string   `json:"from"`
		To          []string `json:"to"`
	} `json:"email"`
	Health struct {
		Status              string `json:"status"`
		ConsecutiveFailures int    `json:"consecutiveFailures"`
		LastError           string `json:"lastError"`
		LastFailureAt       string `json:"lastFailureAt"`
		LastSuccessAt       string `json:"lastSuccessAt"`
	} `json:"health"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

type sendJSON struct {
	GroupID         string  `json:"groupId"`
	Kind            string  `json:"kind"`
	Attempt         int     `json:"attempt"`
	StartedAt       string  `json:"startedAt"`
	DurationSeconds float64 `json:"durationSeconds"`
	Outcome         string  `json:"outcome"`
	Error           string  `json:"error"`
}

const (
	chatURL      = "https://hooks.slack.example.com/services/T000/B000/chat-token-secret"
	chatBody     = `{"name":"Ops chat","type":"chat","url":"` + chatURL + `"}`
	webhookURL   = "https://alerts.example.com/sundial?team=ops"
	webhookBody  = `{"name":"Pager","type":"webhook","events":["hook.failed"],"enabled":false,"url":"` + webhookURL + `"}`
	smtpPassword = "smtp-pa55word-secret"
	emailBody    = `{"name":"On call","type":"email","email":{"host":"smtp.example.com","port":587,"username":"sundial",` +
		`"password":"` + smtpPassword + `","tls":"starttls","from":"sundial@example.com","to":["oncall@example.com","lead@example.com"]}}`
)

func (b bundle) createChannel(body string, mods ...func(*http.Request)) channelJSON {
	b.t.Helper()
	return data[channelJSON](b.t, b.do(http.MethodPost, "/v1/channels", strings.NewReader(body), mods...), http.StatusCreated)
}

func (b bundle) channel(id string, mods ...func(*http.Request)) channelJSON {
	b.t.Helper()
	return data[channelJSON](b.t, b.do(http.MethodGet, "/v1/channels/"+id, nil, mods...), http.StatusOK)
}

func (b bundle) channels() []channelJSON {
	b.t.Helper()
	return data[[]channelJSON](b.t, b.do(http.MethodGet, "/v1/channels", nil), http.StatusOK)
}

func (b bundle) patchChannel(id, body string, mods ...func(*http.Request)) response {
	b.t.Helper()
	return b.do(http.MethodPatch, "/v1/channels/"+id, strings.NewReader(body), mods...)
}

// requireNoSecret fails if a response shows a secret.
func requireNoSecret(t *testing.T, r response) {
	t.Helper()
	for _, secret := range []string{"chat-token-secret", "T000", smtpPassword, "new-secret"} {
		require.NotContains(t, string(r.body), secret)
	}
}

func TestChannelsCreateListGetAndDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Empty(t, b.channels())

	chat := b.createChannel(chatBody)
	require.Equal(t, "Ops chat", chat.Name)
	require.Equal(t, "chat", chat.Type)
	require.Equal(t, []string{"hook.failed", "endpoint.recovered", "endpoint.paused", "quota.threshold"}, chat.Events, "every kind by default")
	require.True(t, chat.Enabled)
	require.Equal(t, "https://hooks.slack.example.com/…", chat.URL, "the token is not shown")
	require.Nil(t, chat.Email)
	require.Equal(t, "untested", chat.Health.Status)
	require.Zero(t, chat.Health.ConsecutiveFailures)

	hook := b.createChannel(webhookBody)
	require.Equal(t, webhookURL, hook.URL, "a webhook's URL is shown")
	require.Equal(t, []string{"hook.failed"}, hook.Events)
	require.False(t, hook.Enabled)

	mail := b.createChannel(emailBody)
	require.Empty(t, mail.URL)
	require.NotNil(t, mail.Email)
	require.Equal(t, "smtp.example.com", mail.Email.Host)
	require.Equal(t, 587, mail.Email.Port)
	require.Equal(t, "sundial", mail.Email.Username)
	require.True(t, mail.Email.PasswordSet)
	require.Equal(t, "starttls", mail.Email.TLS)
	require.Equal(t, []string{"oncall@example.com", "lead@example.com"}, mail.Email.To)

	list := b.channels()
	require.Equal(t, []string{mail.ID, hook.ID, chat.ID}, []string{list[0].ID, list[1].ID, list[2].ID}, "newest first")
	require.Equal(t, chat, b.channel(chat.ID))
	for _, res := range []response{
		b.do(http.MethodGet, "/v1/channels", nil), b.do(http.MethodGet, "/v1/channels/"+chat.ID, nil),
		b.do(http.MethodGet, "/v1/channels/"+mail.ID, nil),
	} {
		requireNoSecret(t, res)
	}

	res := b.do(http.MethodDelete, "/v1/channels/"+hook.ID, nil)
	require.Equal(t, http.StatusNoContent, res.status, string(res.body))
	require.Empty(t, res.body)
	b.do(http.MethodGet, "/v1/channels/"+hook.ID, nil).requireError(t, http.StatusNotFound, "not_found")
	b.do(http.MethodDelete, "/v1/channels/"+hook.ID, nil).requireError(t, http.StatusNotFound, "not_found")
	require.Len(t, b.channels(), 2)

	requireNoSecret(t, response{body: []byte(b.logs.String())})
}

func TestChannelsOfAnotherProjectAreNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := app.CreateProject(b.ctx, app.Database{URL: b.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	c := b.createChannel(chatBody)
	as := as(other.APIKey)
	for _, res := range []response{
		b.do(http.MethodGet, "/v1/channels/"+c.ID, nil, as),
		b.do(http.MethodPatch, "/v1/channels/"+c.ID, strings.NewReader(`{"name":"x"}`), as),
		b.do(http.MethodDelete, "/v1/channels/"+c.ID, nil, as),
		b.do(http.MethodGet, "/v1/channels/"+c.ID+"/sends", nil, as),
		b.do(http.MethodPost, "/v1/channels/"+c.ID+"/test", nil, as),
		b.do(http.MethodGet, "/v1/channels/not-a-uuid", nil),
	} {
		res.requireError(t, http.StatusNotFound, "not_found")
	}
	require.Empty(t, data[[]channelJSON](t, b.do(http.MethodGet, "/v1/channels", nil, as), http.StatusOK))
	require.Equal(t, "Ops chat", b.channel(c.ID).Name, "unchanged")
}

func TestChannelCreationIsValidated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	email := func(members string) string {
		return `{"name":"m","type":"email","email":{` + members + `}}`
	}
	const ok = `"host":"smtp.example.com","port":587,"tls":"starttls","from":"a@example.com","to":["b@example.com"]`
	tests := []struct {
		name, body string
		fields     []string
	}{
		{"unknown type", `{"name":"x","type":"sms","url":"https://example.com/x"}`, []string{"type"}},
		{"no type", `{"name":"x","url":"https://example.com/x"}`, []string{"type"}},
		{"no name", `{"type":"chat","url":"https://example.com/x"}`, []string{"name"}},
		{"blank name", `{"name":"  ","type":"chat","url":"https://example.com/x"}`, []string{"name"}},
		{"long name", `{"name":"` + strings.Repeat("n", 201) + `","type":"chat","url":"https://example.com/x"}`, []string{"name"}},
		{"unknown field", `{"name":"x","type":"chat","url":"https://example.com/x","colour":"red"}`, []string{"colour"}},
		{"unknown email field", email(ok + `,"ssl":true`), []string{"email.ssl"}},
		{"no url", `{"name":"x","type":"chat"}`, []string{"url"}},
		{"bad url", `{"name":"x","type":"webhook","url":"not a url"}`, []string{"url"}},
		{"http url", `{"name":"x","type":"chat","url":"http://hooks.example.com/x"}`, []string{"url"}},
		{"url with credentials", `{"name":"x","type":"webhook","url":"https://user:pw@hooks.example.com/x"}`, []string{"url"}},
		{"url with fragment", `{"name":"x","type":"webhook","url":"https://hooks.example.com/x#y"}`, []string{"url"}},
		{"email on a chat channel", `{"name":"x","type":"chat","url":"https://example.com/x","email":{` + ok + `}}`, []string{"email"}},
		{"url on an email channel", `{"name":"x","type":"email","url":"https://example.com/x","email":{` + ok + `}}`, []string{"url"}},
		{"no email", `{"name":"x","type":"email"}`, []string{"email"}},
		{"unknown event", `{"name":"x","type":"chat","url":"https://example.com/x","events":["hook.failed","hook.created"]}`, []string{"events[1]"}},
		{"event twice", `{"name":"x","type":"chat","url":"https://example.com/x","events":["hook.failed","hook.failed"]}`, []string{"events[1]"}},
		{"channel.test is not an event", `{"name":"x","type":"chat","url":"https://example.com/x","events":["channel.test"]}`, []string{"events[0]"}},
		{"bad tls", email(`"host":"smtp.example.com","port":587,"tls":"ssl","from":"a@example.com","to":["b@example.com"]`), []string{"email.tls"}},
		{"tls none with password", email(`"host":"smtp.example.com","port":25,"tls":"none","username":"u","password":"p","from":"a@example.com","to":["b@example.com"]`), []string{"email.tls"}},
		{"password without username", email(ok + `,"password":"p"`), []string{"email.password"}},
		{"port zero", email(`"host":"smtp.example.com","port":0,"tls":"tls","from":"a@example.com","to":["b@example.com"]`), []string{"email.port"}},
		{"port too high", email(`"host":"smtp.example.com","port":65536,"tls":"tls","from":"a@example.com","to":["b@example.com"]`), []string{"email.port"}},
		{"no port", email(`"host":"smtp.example.com","tls":"tls","from":"a@example.com","to":["b@example.com"]`), []string{"email.port"}},
		{"bad host", email(`"host":"smtp.example.com:25","port":25,"tls":"tls","from":"a@example.com","to":["b@example.com"]`), []string{"email.host"}},
		{"bad from", email(`"host":"smtp.example.com","port":587,"tls":"tls","from":"Sundial <a@example.com>","to":["b@example.com"]`), []string{"email.from"}},
		{"bad to", email(`"host":"smtp.example.com","port":587,"tls":"tls","from":"a@example.com","to":["b@example.com","nobody"]`), []string{"email.to[1]"}},
		{"empty to", email(`"host":"smtp.example.com","port":587,"tls":"tls","from":"a@example.com","to":[]`), []string{"email.to"}},
		{"read-only passwordSet", email(ok + `,"passwordSet":true`), []string{"email.passwordSet"}},
		{"several at once", email(`"host":"","port":0,"tls":"tls","from":"x","to":["b@example.com"]`), []string{"email.host", "email.port", "email.from"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.in(t).do(http.MethodPost, "/v1/channels", strings.NewReader(tt.body)).
				requireError(t, http.StatusBadRequest, "invalid_request", tt.fields...)
		})
	}
	require.Empty(t, b.channels(), "nothing was created")
	res := b.do(http.MethodPost, "/v1/channels", strings.NewReader(`{"name":"x","type":"chat","url":"http://user:chat-token-secret@example.com/T000"}`))
	res.requireError(t, http.StatusBadRequest, "invalid_request", "url")
	requireNoSecret(t, res)
}

func TestAProjectHasAtMostAHundredChannels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Creations at once cannot pass the limit together.
	var wg sync.WaitGroup
	statuses := make(chan int, 110)
	for i := range 110 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"name":"c%d","type":"webhook","url":"https://example.com/%d"}`, i, i)
			statuses <- b.do(http.MethodPost, "/v1/channels", strings.NewReader(body)).status
		})
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	require.Equal(t, map[int]int{http.StatusCreated: 100, http.StatusConflict: 10}, count)
	require.Len(t, b.channels(), 100)
	e := b.do(http.MethodPost, "/v1/channels", strings.NewReader(chatBody)).requireError(t, http.StatusConflict, "conflict")
	require.Contains(t, e.Error, "at most 100 channels")
}

func TestPatchChannelMergesAndKeepsSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mail := b.createChannel(emailBody)
	projectID := uuid.MustParse(b.creds.ProjectID)
	storedConfig := func(id string) string {
		row, err := b.q.GetChannel(b.ctx, store.GetChannelParams{ProjectID: projectID, ID: uuid.MustParse(id)})
		require.NoError(t, err)
		plain, err := secrettest.Keyring().OpenString(secretbox.Label(secretbox.ChannelConfig, row.ID), row.ConfigSealed)
		require.NoError(t, err)
		return plain
	}

	res := b.patchChannel(mail.ID, `{"name":"On call (EU)","email":{"port":465,"tls":"tls"},"events":["quota.threshold"],"enabled":false}`)
	got := data[channelJSON](t, res, http.StatusOK)
	requireNoSecret(t, res)
	require.Equal(t, "On call (EU)", got.Name)
	require.Equal(t, 465, got.Email.Port)
	require.Equal(t, "tls", got.Email.TLS)
	require.Equal(t, "smtp.example.com", got.Email.Host, "left out: kept")
	require.Equal(t, []string{"quota.threshold"}, got.Events)
	require.False(t, got.Enabled)
	require.True(t, got.Email.PasswordSet, "the password left out is kept")
	require.Contains(t, storedConfig(mail.ID), smtpPassword)
	require.Equal(t, mail.CreatedAt, got.CreatedAt)
	require.Equal(t, got, b.channel(mail.ID))

	got = data[channelJSON](t, b.patchChannel(mail.ID, `{"email":{"password":"new-secret"}}`), http.StatusOK)
	require.True(t, got.Email.PasswordSet)
	require.Contains(t, storedConfig(mail.ID), "new-secret")

	// tls none needs the credentials gone: both at once, with null.
	b.patchChannel(mail.ID, `{"email":{"tls":"none"}}`).requireError(t, http.StatusBadRequest, "invalid_request", "email.tls")
	got = data[channelJSON](t, b.patchChannel(mail.ID, `{"email":{"tls":"none","port":25,"username":null,"password":null}}`), http.StatusOK)
	require.False(t, got.Email.PasswordSet)
	require.Empty(t, got.Email.Username)
	require.NotContains(t, storedConfig(mail.ID), "new-secret")

	chat := b.createChannel(chatBody)
	got = data[channelJSON](t, b.patchChannel(chat.ID, `{"name":"Renamed"}`), http.StatusOK)
	require.Equal(t, "https://hooks.slack.example.com/…", got.URL)
	require.Contains(t, storedConfig(chat.ID), chatURL, "the chat URL left out is kept")
	got = data[channelJSON](t, b.patchChannel(chat.ID, `{"url":"https://chat.example.org/hooks/other-token"}`), http.StatusOK)
	require.Equal(t, "https://chat.example.org/…", got.URL)

	requireNoSecret(t, response{body: []byte(b.logs.String())})
}

func TestPatchChannelIsValidated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mail := b.createChannel(emailBody)
	chat := b.createChannel(chatBody)
	tests := []struct {
		name, id, body string
		fields         []string
	}{
		{"type is read-only", chat.ID, `{"type":"webhook"}`, []string{"type"}},
		{"health is read-only", chat.ID, `{"health":{"status":"ok"}}`, []string{"health"}},
		{"id is read-only", chat.ID, `{"id":"` + chat.ID + `"}`, []string{"id"}},
		{"name null", chat.ID, `{"name":null}`, []string{"name"}},
		{"empty name", chat.ID, `{"name":""}`, []string{"name"}},
		{"events null", chat.ID, `{"events":null}`, []string{"events"}},
		{"unknown event", chat.ID, `{"events":["hook.failed","nope"]}`, []string{"events[1]"}},
		{"http url", chat.ID, `{"url":"http://hooks.example.com/x"}`, []string{"url"}},
		{"url null", chat.ID, `{"url":null}`, []string{"url"}},
		{"email on chat", chat.ID, `{"email":{"port":25}}`, []string{"email"}},
		{"url on email", mail.ID, `{"url":"https://example.com/x"}`, []string{"url"}},
		{"bad port", mail.ID, `{"email":{"port":70000}}`, []string{"email.port"}},
		{"host null", mail.ID, `{"email":{"host":null}}`, []string{"email.host"}},
		{"empty to", mail.ID, `{"email":{"to":[]}}`, []string{"email.to"}},
		{"bad address", mail.ID, `{"email":{"to":["ok@example.com","not an address"]}}`, []string{"email.to[1]"}},
		{"unknown member", mail.ID, `{"email":{"starttls":true}}`, []string{"email.starttls"}},
		{"passwordSet", mail.ID, `{"email":{"passwordSet":false}}`, []string{"email.passwordSet"}},
		{"unknown field", mail.ID, `{"colour":"red"}`, []string{"colour"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.in(t).patchChannel(tt.id, tt.body).requireError(t, http.StatusBadRequest, "invalid_request", tt.fields...)
		})
	}
	require.Equal(t, mail, b.channel(mail.ID), "nothing changed")
	require.Equal(t, chat, b.channel(chat.ID))
	b.patchChannel(uuid.NewString(), `{"name":"x"}`).requireError(t, http.StatusNotFound, "not_found")
}

func TestChannelHealthIsDerivedFromTheNotifiersRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.createChannel(chatBody)
	id := uuid.MustParse(c.ID)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	errText := "receiver answered 500"
	tests := []struct {
		name     string
		params   storetest.SetChannelHealthForTestParams
		status   string
		failures int
	}{
		{"never tried", storetest.SetChannelHealthForTestParams{}, "untested", 0},
		{"failing", storetest.SetChannelHealthForTestParams{ConsecutiveFailures: 3, LastFailureAt: &at, LastError: &errText}, "failing", 3},
		{"recovered", storetest.SetChannelHealthForTestParams{LastSuccessAt: &at, LastFailureAt: &at, LastError: &errText}, "ok", 0},
		{"failing again", storetest.SetChannelHealthForTestParams{ConsecutiveFailures: 1, LastSuccessAt: &at, LastFailureAt: &at, LastError: &errText}, "failing", 1},
		{"ok", storetest.SetChannelHealthForTestParams{LastSuccessAt: &at}, "ok", 0},
	}
	for _, tt := range tests {
		tt.params.ID = id
		require.NoError(t, b.tq.SetChannelHealthForTest(b.ctx, tt.params))
		h := b.channel(c.ID).Health
		require.Equal(t, tt.status, h.Status, tt.name)
		require.Equal(t, tt.failures, h.ConsecutiveFailures, tt.name)
		if tt.params.LastError != nil {
			require.Equal(t, errText, h.LastError, tt.name)
		}
		if tt.params.LastFailureAt != nil {
			require.Equal(t, "2030-01-02T03:04:05Z", h.LastFailureAt, tt.name)
		}
	}
}

// notifier plays the notifier's part for a send test, in a goroutine of
// its own: it waits for the test alert, takes it into a group for the
// channel and records a first try with the given outcome. The returned
// channel gives its error, if any.
func (b bundle) notifier(channelID, outcome string, errText *string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- b.playNotifier(channelID, outcome, errText) }()
	return done
}

func (b bundle) playNotifier(channelID, outcome string, errText *string) error {
	projectID := uuid.MustParse(b.creds.ProjectID)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		alerts, err := b.tq.ListAlertsForTest(b.ctx, projectID)
		if err != nil {
			return err
		}
		for _, a := range alerts {
			if a.Kind == "channel.test" && a.GroupID == nil {
				return b.storeTry(a.ID, channelID, outcome, errText, 1)
			}
		}
		select {
		case <-deadline:
			return errors.New("no send test alert within 10 s")
		case <-tick.C:
		}
	}
}

// recordTry records a try of a group of its own for the channel.
func (b bundle) recordTry(channelID, outcome string, errText *string) uuid.UUID {
	b.t.Helper()
	group := uuid.New()
	require.NoError(b.t, b.storeTryIn(group, "", channelID, outcome, errText, 1))
	return group
}

func (b bundle) storeTry(alertID, channelID, outcome string, errText *string, attempt int32) error {
	return b.storeTryIn(uuid.New(), alertID, channelID, outcome, errText, attempt)
}

// storeTryIn does what the notifier does for one try: the group (holding
// the alert, when one is named), the send and its attempt.
func (b bundle) storeTryIn(group uuid.UUID, alertID, channelID, outcome string, errText *string, attempt int32) error {
	ch := uuid.MustParse(channelID)
	err := b.tq.InsertAlertGroupForTest(b.ctx, storetest.InsertAlertGroupForTestParams{
		ID: group, ProjectID: uuid.MustParse(b.creds.ProjectID), Kind: "channel.test", ChannelID: &ch,
	})
	if err != nil {
		return err
	}
	if alertID != "" {
		if err := b.tq.SetAlertGroupForTest(b.ctx, storetest.SetAlertGroupForTestParams{ID: alertID, GroupID: &group}); err != nil {
			return err
		}
	}
	target := channelID // the notifier names a channel target by its id
	err = b.tq.InsertAlertSendForTest(b.ctx, storetest.InsertAlertSendForTestParams{
		GroupID: group, Target: target, ChannelID: &ch, State: outcome, Attempts: attempt,
	})
	if err != nil {
		return err
	}
	now, err := b.q.DatabaseNow(b.ctx)
	if err != nil {
		return err
	}
	return b.tq.InsertAlertSendAttemptForTest(b.ctx, storetest.InsertAlertSendAttemptForTestParams{
		GroupID: group, Target: target, Attempt: attempt, ChannelID: &ch, StartedAt: now,
		DurationSeconds: 0.25, Outcome: outcome, Error: errText,
	})
}

func TestChannelSendsListsTheTriesNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.createChannel(webhookBody)
	other := b.createChannel(chatBody)
	errText := "receiver answered 503"
	first := b.recordTry(c.ID, "failed", &errText)
	second := b.recordTry(c.ID, "sent", nil)
	b.recordTry(other.ID, "sent", nil)

	sends := data[[]sendJSON](t, b.do(http.MethodGet, "/v1/channels/"+c.ID+"/sends", nil), http.StatusOK)
	require.Len(t, sends, 2, "only this channel's")
	require.Equal(t, second.String(), sends[0].GroupID)
	require.Equal(t, "sent", sends[0].Outcome)
	require.Empty(t, sends[0].Error)
	require.Equal(t, first.String(), sends[1].GroupID)
	require.Equal(t, "failed", sends[1].Outcome)
	require.Equal(t, errText, sends[1].Error)
	require.Equal(t, "channel.test", sends[1].Kind)
	require.Equal(t, 1, sends[1].Attempt)
	require.InDelta(t, 0.25, sends[1].DurationSeconds, 1e-9)

	one := data[[]sendJSON](t, b.do(http.MethodGet, "/v1/channels/"+c.ID+"/sends?limit=1", nil), http.StatusOK)
	require.Equal(t, sends[:1], one)
	for _, bad := range []string{"0", "201", "x"} {
		b.do(http.MethodGet, "/v1/channels/"+c.ID+"/sends?limit="+bad, nil).requireError(t, http.StatusBadRequest, "invalid_request", "limit")
	}
	b.do(http.MethodGet, "/v1/channels/"+uuid.NewString()+"/sends", nil).requireError(t, http.StatusNotFound, "not_found")
}

func TestSendTestAnswersTheFirstTry(t *testing.T) {
	t.Parallel()
	b, js := setupWithNATS(t)
	c := b.createChannel(chatBody)
	errText := "receiver answered 404 Not Found"
	played := b.notifier(c.ID, "failed", &errText)

	res := b.do(http.MethodPost, "/v1/channels/"+c.ID+"/test", nil)
	got := data[struct {
		Outcome         string   `json:"outcome"`
		DurationSeconds *float64 `json:"durationSeconds"`
		Error           string   `json:"error"`
	}](t, res, http.StatusOK)
	require.NoError(t, <-played)
	require.Equal(t, "failed", got.Outcome)
	require.Equal(t, errText, got.Error)
	require.NotNil(t, got.DurationSeconds)
	require.InDelta(t, 0.25, *got.DurationSeconds, 1e-9)

	// The alert is stored and its event published, named by the alert id.
	alerts, err := b.tq.ListAlertsForTest(b.ctx, uuid.MustParse(b.creds.ProjectID))
	require.NoError(t, err)
	require.Len(t, alerts, 1)
	require.True(t, strings.HasPrefix(alerts[0].ID, "channel.test:"), alerts[0].ID)
	var stored eventv1.Alert
	require.NoError(t, proto.Unmarshal(alerts[0].Body, &stored))
	require.Equal(t, eventv1.AlertKind_ALERT_KIND_CHANNEL_TEST, stored.GetKind())
	require.Equal(t, c.ID, stored.GetChannelId())
	require.Equal(t, b.creds.ProjectID, stored.GetProjectId())
	require.Equal(t, alerts[0].ID, stored.GetAlertId())

	stream, err := js.Stream(b.ctx, event.StreamAlerts)
	require.NoError(t, err)
	msg, err := stream.GetLastMsgForSubject(b.ctx, event.SubjectAlert)
	require.NoError(t, err)
	require.Equal(t, event.MsgID(event.KindAlert, alerts[0].ID, 0), msg.Header.Get("Nats-Msg-Id"))
	var published eventv1.Alert
	require.NoError(t, proto.Unmarshal(msg.Data, &published))
	require.True(t, proto.Equal(&stored, &published))
}

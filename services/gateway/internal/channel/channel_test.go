package channel_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/channel"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// noPublisher is a Publisher these tests never reach (no send test here).
type noPublisher struct{}

func (noPublisher) Publish(context.Context, bus.Message) error {
	return errors.New("no NATS in these tests")
}

type bundle struct {
	t        *testing.T
	ctx      context.Context
	pool     *pgxpool.Pool
	channels *channel.Service
	project  uuid.UUID
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)
	return bundle{t: t, ctx: t.Context(), pool: pool, channels: channel.NewService(pool, noPublisher{}, secrettest.Keyring()), project: created.ID}
}

func decode[T any](t *testing.T, body string) *T {
	t.Helper()
	var v T
	require.NoError(t, strictjson.Decode([]byte(body), &v))
	return &v
}

func (b bundle) stored(id uuid.UUID) store.NotificationChannel {
	b.t.Helper()
	row, err := store.New(b.pool).GetChannel(b.ctx, store.GetChannelParams{ProjectID: b.project, ID: id})
	require.NoError(b.t, err)
	return row
}

// storedConfig is the channel's stored config, opened: it is stored sealed.
func (b bundle) storedConfig(id uuid.UUID) []byte {
	b.t.Helper()
	row := b.stored(id)
	config, err := secrettest.Keyring().Open(secretbox.Label(secretbox.ChannelConfig, row.ID), row.ConfigSealed)
	require.NoError(b.t, err)
	return config
}

// The notifier reads the stored config with channelconfig.Parse: what the
// gateway stores must parse and validate there.
func TestTheStoredConfigIsWhatTheNotifierReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, err := b.channels.Create(b.ctx, b.project, *decode[channel.CreateRequest](t, `{"name":" Mail ","type":"email",
		"email":{"host":"smtp.example.com","port":465,"username":"u","password":"p","tls":"tls","from":"a@example.com","to":["b@example.com"]}}`))
	require.NoError(t, err)
	require.Equal(t, "Mail", c.Name, "trimmed")
	row := b.stored(c.ID)
	parsed, err := channelconfig.Parse(row.Kind, b.storedConfig(c.ID))
	require.NoError(t, err)
	require.Equal(t, channelconfig.Email{
		Host: "smtp.example.com", Port: 465, Username: "u", Password: "p", TLS: "tls",
		From: "a@example.com", To: []string{"b@example.com"},
	}, parsed)
	require.Equal(t, channelconfig.Events, row.Events)

	w, err := b.channels.Create(b.ctx, b.project, *decode[channel.CreateRequest](t, `{"name":"W","type":"webhook","url":"https://example.com/a"}`))
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(b.storedConfig(w.ID), &cfg))
	require.Equal(t, map[string]any{"url": "https://example.com/a"}, cfg)
}

// Two changes at once to different fields both take effect: each merges
// into what the other committed.
func TestConcurrentUpdatesDoNotUndoEachOther(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, err := b.channels.Create(b.ctx, b.project, *decode[channel.CreateRequest](t, `{"name":"M","type":"email",
		"email":{"host":"smtp.example.com","port":587,"tls":"starttls","from":"a@example.com","to":["b@example.com"]}}`))
	require.NoError(t, err)
	patches := []string{
		`{"name":"Renamed"}`,
		`{"enabled":false}`,
		`{"events":["hook.failed"]}`,
		`{"email":{"port":2525}}`,
		`{"email":{"to":["c@example.com"]}}`,
	}
	errs := make([]error, len(patches))
	var wg sync.WaitGroup
	for i, p := range patches {
		wg.Go(func() { _, errs[i] = b.channels.Update(b.ctx, b.project, c.ID, decode[channel.PatchRequest](t, p)) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	got, err := b.channels.Get(b.ctx, b.project, c.ID)
	require.NoError(t, err)
	require.Equal(t, "Renamed", got.Name)
	require.False(t, got.Enabled)
	require.Equal(t, []string{"hook.failed"}, got.Events)
	require.Equal(t, 2525, got.Email.Port)
	require.Equal(t, []string{"c@example.com"}, got.Email.To)
}

func TestEveryProblemIsReportedAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.channels.Create(b.ctx, b.project, *decode[channel.CreateRequest](t, `{"name":"","type":"email","events":["x"],
		"email":{"host":"","port":0,"tls":"none","username":"u","password":"p","from":"","to":[]}}`))
	var bad *channel.InvalidError
	require.ErrorAs(t, err, &bad)
	var fields []string
	for _, p := range bad.Problems {
		fields = append(fields, p.Field)
	}
	require.Equal(t, []string{"name", "events[0]", "email.host", "email.port", "email.tls", "email.from", "email.to"}, fields)
	list, err := b.channels.List(b.ctx, b.project)
	require.NoError(t, err)
	require.Empty(t, list)
}

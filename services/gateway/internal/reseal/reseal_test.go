package reseal_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/channel"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/reseal"
	"github.com/sundial-run/sundial/services/gateway/internal/signingkey"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// noPublisher is a Publisher these tests never reach (no send test here).
type noPublisher struct{}

func (noPublisher) Publish(context.Context, bus.Message) error {
	return errors.New("no NATS in these tests")
}

// entry is a fresh keyring entry "id:base64key".
func entry(t *testing.T, id string) string {
	t.Helper()
	raw := make([]byte, secretbox.KeyBytes)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	return id + ":" + base64.StdEncoding.EncodeToString(raw)
}

func keyring(t *testing.T, entries ...string) *secretbox.Keyring {
	t.Helper()
	k, err := secretbox.Parse(strings.Join(entries, ","))
	require.NoError(t, err)
	return k
}

type bundle struct {
	t    *testing.T
	ctx  context.Context
	pool *pgxpool.Pool
	tq   *storetest.Queries
}

// stored is what the projects' owners gave Sundial, to find again after
// each step: the signing keys, Authorization values and channel URLs.
type stored struct {
	projects []uuid.UUID
	signing  map[uuid.UUID][]string // per project, as signingkey.List gives them
	urls     map[uuid.UUID]string   // per channel
	plain    []string               // every secret value, to search the database for
}

// readAll reads every secret back through the gateway's own readers with keys.
func (b bundle) readAll(keys *secretbox.Keyring, s stored) error {
	for _, p := range s.projects {
		list, err := signingkey.NewService(b.pool, keys).List(b.ctx, p)
		if err != nil {
			return err
		}
		var got []string
		for _, k := range list {
			got = append(got, k.Secret)
		}
		require.Equal(b.t, s.signing[p], got)
		if _, err := project.ActiveSigningKey(b.ctx, store.New(b.pool), keys, p); err != nil {
			return err
		}
	}
	for id, url := range s.urls {
		c, err := channel.NewService(b.pool, noPublisher{}, keys).Get(b.ctx, s.projects[0], id)
		if err != nil {
			return err
		}
		require.Equal(b.t, url, c.URL)
	}
	return nil
}

// A rotation as docs/security.md tells it: secrets sealed with key A, key
// B added first; everything still reads; a reseal pass moves every value to
// B and leaves no secret readable in the tables; A removed: everything
// still reads; without B, reading fails with an error naming key "b" and
// no secret.
func TestRotationReadsEverythingAtEveryStep(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewPool(t)
	b := bundle{t: t, ctx: t.Context(), pool: pool, tq: storetest.New(pool)}
	a := secrettest.Keyring()
	s := stored{signing: map[uuid.UUID][]string{}, urls: map[uuid.UUID]string{}}

	// Two projects, each with an Authorization value, an active and a
	// retiring signing key, and a channel (both under the first project),
	// sealed with A through the gateway's own writers.
	for i, name := range []string{"One", "Two"} {
		p, err := project.Create(b.ctx, pool, a, name, "hooks.example.com")
		require.NoError(t, err)
		auth := "Bearer rotation-auth-" + name
		patch, err := project.DecodePatch([]byte(`{"authorizationHeader":"` + auth + `"}`))
		require.NoError(t, err)
		_, err = project.NewService(pool, a).Update(b.ctx, p.ID, patch)
		require.NoError(t, err)
		rotated, err := signingkey.NewService(pool, a).Rotate(b.ctx, p.ID, signingkey.DefaultGrace)
		require.NoError(t, err)
		s.projects = append(s.projects, p.ID)
		s.signing[p.ID] = []string{rotated[0].Secret, rotated[1].Secret}
		token := "rotation-webhook-token-" + name
		url := "https://alerts.example.com/in?token=" + token
		var req channel.CreateRequest
		require.NoError(t, json.Unmarshal([]byte(`{"name":"W`+strconv.Itoa(i)+`","type":"webhook","url":"`+url+`"}`), &req))
		ch, err := channel.NewService(pool, noPublisher{}, a).Create(b.ctx, s.projects[0], req)
		require.NoError(t, err)
		s.urls[ch.ID] = url
		s.plain = append(s.plain, rotated[0].Secret, rotated[1].Secret, auth, token)
	}
	require.NoError(t, b.readAll(a, s))

	// Step 1: B added first, A kept. Everything reads; nothing moved yet.
	bEntry := entry(t, "b")
	both := keyring(t, bEntry, secrettest.Keys)
	require.NoError(t, b.readAll(both, s))

	// Step 2: reseal. Every value is sealed with B.
	counts, err := reseal.Run(b.ctx, pool, both)
	require.NoError(t, err)
	// Rows: 4 signing keys, 2 projects, 2 channels.
	require.Equal(t, reseal.Counts{Sealed: 8}, counts)
	sealed, err := b.tq.SealedSecretsForTest(b.ctx)
	require.NoError(t, err)
	require.Len(t, sealed, 4+2+2+2, "signing keys, Authorization values, async secrets, channel configs")
	for _, v := range sealed {
		id, err := secretbox.KeyID(v)
		require.NoError(t, err)
		require.Equal(t, "b", id)
	}
	rows, err := b.tq.DumpSecretTablesForTest(b.ctx)
	require.NoError(t, err)
	dump := strings.Join(rows, "\n")
	for _, secret := range s.plain {
		require.NotContains(t, dump, secret, "no secret is stored in plain text")
	}
	again, err := reseal.Run(b.ctx, pool, both)
	require.NoError(t, err)
	require.Equal(t, reseal.Counts{}, again, "a second pass finds nothing to do")

	// Step 3: A removed. Everything still reads.
	onlyB := keyring(t, bEntry)
	require.NoError(t, b.readAll(onlyB, s))

	// Without B, reading fails with an error that names the key and no secret.
	err = b.readAll(keyring(t, entry(t, "c")), s)
	require.ErrorIs(t, err, secretbox.ErrUnknownKey)
	require.ErrorContains(t, err, `key "b"`)
	for _, secret := range append(s.plain, bEntry) {
		require.NotContains(t, err.Error(), secret)
	}
	counts, err = reseal.Run(b.ctx, pool, keyring(t, entry(t, "c")))
	require.ErrorIs(t, err, secretbox.ErrUnknownKey)
	require.Equal(t, 8, counts.Failed, "every row, left as it is")
	require.Zero(t, counts.Sealed)
	require.NoError(t, b.readAll(onlyB, s), "a failed pass changes nothing")
}

// A value sealed for one row does not open in another: swapping two
// projects' sealed Authorization values makes both fail to open instead
// of sending one project's credential to the other's receivers.
func TestASealedValueMovedToAnotherRowDoesNotOpen(t *testing.T) {
	t.Parallel()
	k := secrettest.Keyring()
	one, two := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	sealed, err := k.SealString(secretbox.Label(secretbox.ProjectAuthorization, one), "Bearer one")
	require.NoError(t, err)
	_, err = k.OpenString(secretbox.Label(secretbox.ProjectAuthorization, two), sealed)
	require.ErrorIs(t, err, secretbox.ErrNotOpened)
}

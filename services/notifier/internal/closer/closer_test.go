package closer_test

import (
	"context"
	"log/slog"
	"sort"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/notifier/internal/closer"
	"github.com/sundial-run/sundial/services/notifier/internal/intake"
	"github.com/sundial-run/sundial/services/notifier/notifiertest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	db *notifiertest.DB
}

func setup(t *testing.T) bundle {
	t.Helper()
	return bundle{db: notifiertest.Open(t, pgtest.NewDB(t))}
}

// takeIn takes an alert in as a notifier whose operator SMTP is owners.
func (b bundle) takeIn(t *testing.T, ev *eventv1.Alert, owners bool) intake.Result {
	t.Helper()
	body, err := proto.Marshal(ev)
	require.NoError(t, err)
	a, err := intake.FromEvent(ev, body)
	require.NoError(t, err)
	res, err := intake.New(b.db.Pool, slog.New(slog.DiscardHandler), intake.Options{Owners: owners}).TakeIn(context.Background(), a, "test")
	require.NoError(t, err)
	return res
}

// targets lists the targets of a group's sends.
func (b bundle) targets(t *testing.T, project, group uuid.UUID) []string {
	t.Helper()
	out := []string{}
	for _, s := range b.db.Sends(t, project) {
		if s.GroupID == group {
			out = append(out, s.Target)
		}
	}
	sort.Strings(out)
	return out
}

func sorted(ids ...uuid.UUID) []string {
	out := []string{}
	for _, id := range ids {
		out = append(out, id.String())
	}
	sort.Strings(out)
	return out
}

func TestSendsGoToTheEnabledChannelsSubscribedToTheKind(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.db.Project(t, notifiertest.Project{GroupWait: 0})
	all := b.db.ChatChannel(t, project, "https://chat.example.com/a")
	recoveries := b.db.ChatChannel(t, project, "https://chat.example.com/b", "endpoint.recovered")
	disabled := b.db.Channel(t, project, "chat", []byte(`{"url":"https://chat.example.com/c"}`), false)
	other := b.db.Project(t, notifiertest.Project{})
	foreign := b.db.ChatChannel(t, other, "https://chat.example.com/d")

	failed := b.takeIn(t, b.db.FailedHook(t, project, "/f"), false)
	n, err := closer.New(b.db.Pool, slog.New(slog.DiscardHandler), false, nil).CloseDue(context.Background(), 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, sorted(all), b.targets(t, project, failed.GroupID))
	require.EqualValues(t, 0, b.db.Followup(t, project).FollowupSecs, "the project's minimum (0 in the fixture)")

	recovered := b.takeIn(t, notifiertest.Recovered(project, "/r"), false)
	require.Equal(t, sorted(all, recoveries), b.targets(t, project, recovered.GroupID))

	test := notifiertest.Recovered(project, "/t")
	test.Kind, test.AlertId, test.ChannelId = eventv1.AlertKind_ALERT_KIND_CHANNEL_TEST, "channel.test:"+uuid.NewString(), disabled.String()
	tested := b.takeIn(t, test, false)
	require.Equal(t, sorted(disabled), b.targets(t, project, tested.GroupID), "a test reaches its channel, enabled or not")

	test.AlertId, test.ChannelId = "channel.test:"+uuid.NewString(), foreign.String()
	elsewhere := b.takeIn(t, test, false)
	require.Empty(t, b.targets(t, project, elsewhere.GroupID), "never a channel of another project")
}

func TestQuotaAlertsReachTheOwnersOnlyThroughTheOperatorsSMTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	project := b.db.Project(t, notifiertest.Project{Owners: []string{"owner@example.com"}})
	channel := b.db.ChatChannel(t, project, "https://chat.example.com/a")
	bare := b.db.Project(t, notifiertest.Project{})

	with := b.takeIn(t, notifiertest.Quota(project, 75), true)
	require.Equal(t, []string{channel.String(), "owners"}, b.targets(t, project, with.GroupID))
	without := b.takeIn(t, notifiertest.Quota(project, 100), false)
	require.Equal(t, []string{channel.String()}, b.targets(t, project, without.GroupID))
	none := b.takeIn(t, notifiertest.Quota(bare, 75), true)
	require.Empty(t, b.targets(t, bare, none.GroupID), "no owner addresses, no owner e-mail")
}

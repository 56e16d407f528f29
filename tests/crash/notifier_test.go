package crash

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/notifier/notifiertest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/proc"
)

// TestNotifierKilled kills notifier processes with SIGKILL between taking
// an alert in and sending it, and while a send is in flight, and checks
// that the message still arrives, with no more duplicates than the sends
// that were in flight at the kill. The notifier runs as a process here
// (not in-process as in the other suites), built once for both cases.
func TestNotifierKilled(t *testing.T) {
	t.Parallel()
	bin := buildNotifier(t)

	t.Run("after intake, before the group is due", func(t *testing.T) {
		t.Parallel()
		n := newNotifierSuite(t, bin)
		// The group goes out 3 s after it opened: long enough to kill the
		// notifier that took the alert in before it sends anything.
		project := n.db.Project(t, notifiertest.Project{GroupWait: 3 * time.Second, FollowupMin: time.Hour})
		n.db.ChatChannel(t, project, n.receiver.URL())
		first := n.start(t, nil)

		n.db.Produce(t, n.js, n.db.FailedHook(t, project, "/killed"))
		require.Eventually(t, func() bool {
			alerts := n.db.Alerts(t, project)
			return len(alerts) == 1 && alerts[0].GroupID != nil
		}, 30*time.Second, 10*time.Millisecond, "the notifier never took the alert in")
		first.Kill()
		require.Empty(t, n.receiver.Requests(), "nothing was sent before the kill")
		groups := n.db.Groups(t, project)
		require.Len(t, groups, 1)
		require.Nil(t, groups[0].ClosedAt, "the group was still open at the kill")

		n.start(t, nil)
		got := n.receiver.Wait(t, 1, 60*time.Second)
		require.Contains(t, got[0].Text, groups[0].ID.String())
		n.settled(t, project)
		require.Len(t, n.receiver.Requests(), 1, "the message arrives exactly once")
		notified, total := n.db.Notified(t, project)
		require.Equal(t, total, notified)
	})

	t.Run("while the receiver holds the send", func(t *testing.T) {
		t.Parallel()
		n := newNotifierSuite(t, bin)
		project := n.db.Project(t, notifiertest.Project{})
		n.db.ChatChannel(t, project, n.receiver.URL())
		// A short lease, so that the send of the killed notifier is taken
		// over within the test; the send timeout must stay under it.
		short := map[string]string{"SUNDIAL_NOTIFIER_SEND_LEASE": "3s", "SUNDIAL_NOTIFIER_SEND_TIMEOUT": "2s"}
		n.receiver.Hold()
		first := n.start(t, short)

		n.db.Produce(t, n.js, notifiertest.Recovered(project, "/held"))
		n.receiver.Wait(t, 1, 60*time.Second)
		first.Kill()
		// The held answer goes nowhere: the notifier that asked is gone.
		n.receiver.Release()

		n.start(t, short)
		got := n.receiver.Wait(t, 2, 60*time.Second)
		n.settled(t, project)
		// The receiver got the message before the kill, but the notifier
		// never recorded it: that one send in flight is the duplicate
		// bound. Receivers deduplicate by the group id that it carries.
		require.Len(t, n.receiver.Requests(), 2, "one duplicate at most: the send in flight at the kill")
		require.Equal(t, got[0].Text, got[1].Text)
		sends := n.db.Sends(t, project)
		require.Len(t, sends, 1)
		require.Equal(t, "sent", sends[0].State)
		require.EqualValues(t, 2, sends[0].Attempts, "claimed twice")
		attempts := n.db.Attempts(t, project)
		require.Len(t, attempts, 1, "only the finished try is recorded")
		require.EqualValues(t, 2, attempts[0].Attempt)
	})
}

// notifierSuite is a database, a NATS server and a chat receiver for
// notifier processes.
type notifierSuite struct {
	bin      string
	env      map[string]string
	db       *notifiertest.DB
	nats     *natstest.Server
	js       jetstream.JetStream
	receiver *notifiertest.Receiver
}

func newNotifierSuite(t *testing.T, bin string) *notifierSuite {
	t.Helper()
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{})
	rcv := notifiertest.NewReceiver(t)
	_, js := ns.Connect(t)
	return &notifierSuite{
		js:       js,
		bin:      bin,
		db:       notifiertest.Open(t, dbURL),
		nats:     ns,
		receiver: rcv,
		env: map[string]string{
			"SUNDIAL_DATABASE_URL":           dbURL,
			"SUNDIAL_SECRET_KEYS":            secrettest.Keys,
			"SUNDIAL_NATS_URL":               ns.ClientURL(),
			"SUNDIAL_GATEWAY_ADMIN_ADDR":     "127.0.0.1:0",
			"SUNDIAL_SCHEDULER_ADMIN_ADDR":   "127.0.0.1:0",
			"SUNDIAL_DISPATCHER_ADMIN_ADDR":  "127.0.0.1:0",
			"SUNDIAL_NOTIFIER_ADMIN_ADDR":    "127.0.0.1:0",
			"SUNDIAL_DELIVERY_ALLOW_PRIVATE": "true",
			"SUNDIAL_DELIVERY_CA_FILE":       rcv.CAFile,
			"SUNDIAL_NOTIFIER_POLL_INTERVAL": "100ms",
			"SUNDIAL_DATABASE_MAX_CONNS":     "4",
			"SUNDIAL_SHUTDOWN_TIMEOUT":       "5s",
			"SUNDIAL_LOG_LEVEL":              "info",
		},
	}
}

// start runs a notifier process on the suite's environment plus extra.
func (n *notifierSuite) start(t *testing.T, extra map[string]string) *proc.Process {
	t.Helper()
	return proc.Start(t, "notifier", n.bin, []map[string]string{n.env, extra})
}

// settled waits until every send of the project is sent.
func (n *notifierSuite) settled(t *testing.T, project uuid.UUID) {
	t.Helper()
	require.Eventually(t, func() bool {
		sends := n.db.Sends(t, project)
		for _, s := range sends {
			if s.State != "sent" {
				return false
			}
		}
		return len(sends) > 0
	}, 60*time.Second, 20*time.Millisecond, "the sends never all went out: %+v", n.db.Sends(t, project))
}

// buildNotifier builds the notifier command (without the race detector)
// into the test's temporary folder.
func buildNotifier(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/sundial-run/sundial/services/notifier/cmd/notifier").CombinedOutput()
	require.NoError(t, err, fmt.Sprintf("go build notifier: %s", out))
	return filepath.Join(dir, "notifier")
}

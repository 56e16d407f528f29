package dispatch_test

import (
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/signing"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/services/dispatcher/internal/listener"
	"github.com/sundial-run/sundial/services/dispatcher/internal/report"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// The listener's deliveries (docs/listener.md, "Routing"): a test
// subscriber on the real subject and queue group plays the gateway.

// listenerBundle is a dispatcher bundle whose handler sends listener
// deliveries on a NATS connection of its own, and one for the gateway.
type listenerBundle struct {
	bundle
	handler *dispatch.Handler
	gateway *nats.Conn
}

// listenerTimeout is the handler's wait for the gateway's answer: short,
// since one test waits for it to pass.
const listenerTimeout = 500 * time.Millisecond

func setupListener(t *testing.T) listenerBundle {
	t.Helper()
	return setupListenerWith(t, listenerTimeout)
}

// setupListenerWith sets the handler's ListenerTimeout (the lease it
// needs); the requests still wait listenerTimeout.
func setupListenerWith(t *testing.T, need time.Duration) listenerBundle {
	t.Helper()
	b := setup(t, nil)
	nc, _ := b.nats.Connect(t)
	gateway, _ := b.nats.Connect(t)
	send := sender(b.js, report.DefaultRetry)
	h := dispatch.NewHandler(dispatch.Config{
		Credentials:     credential.NewCache(credential.NewStore(b.pool, secrettest.Keyring()), time.Minute, 100),
		Sender:          b.client,
		Results:         runReporter(t, send),
		HandBack:        send,
		Log:             slog.New(slog.NewTextHandler(io.Discard, nil)),
		DeliveryTimeout: 5 * time.Second,
		Listener:        listener.New(nc, listenerTimeout),
		ListenerTimeout: need,
	})
	t.Cleanup(h.Close)
	return listenerBundle{bundle: b, handler: h, gateway: gateway}
}

// listenerHook is a DueHook of a new project for its listener.
func (b listenerBundle) listenerHook(t *testing.T, p fixture.Project) *eventv1.DueHook {
	t.Helper()
	due := b.dueHook(t, p)
	due.Listener = true
	return due
}

// answer subscribes the gateway to the project's deliveries: each is
// handed to got and answered with a (nil: no reply at all).
func (b listenerBundle) answer(t *testing.T, projectID string, a *eventv1.ListenerAnswer) <-chan *eventv1.ListenerDelivery {
	t.Helper()
	got := make(chan *eventv1.ListenerDelivery, 4)
	sub, err := b.gateway.QueueSubscribe(event.ListenerDeliverSubject(projectID), event.ListenerQueue, func(m *nats.Msg) {
		var d eventv1.ListenerDelivery
		if proto.Unmarshal(m.Data, &d) != nil {
			return
		}
		got <- &d
		if a != nil {
			data, err := proto.Marshal(a)
			if err == nil {
				_ = m.Respond(data)
			}
		}
	})
	require.NoError(t, err)
	require.NoError(t, b.gateway.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return got
}

func TestListenerAnswersBecomeAttemptResults(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		answer  *eventv1.ListenerAnswer
		outcome eventv1.Outcome
		err     string
		timeout int32
	}{
		"ack": {
			answer:  &eventv1.ListenerAnswer{Kind: eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK, ConnectionId: "c1"},
			outcome: eventv1.Outcome_OUTCOME_SUCCESS,
		},
		"nack": {
			answer:  &eventv1.ListenerAnswer{Kind: eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_NACK, Error: "db locked"},
			outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "listener: db locked",
		},
		"accept": {
			answer:  &eventv1.ListenerAnswer{Kind: eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACCEPT, AsyncTimeoutSeconds: 120},
			outcome: eventv1.Outcome_OUTCOME_ASYNC, timeout: 120,
		},
		"timeout": {
			answer:  &eventv1.ListenerAnswer{Kind: eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_TIMEOUT, Error: "ack_timeout"},
			outcome: eventv1.Outcome_OUTCOME_FAILURE, err: "ack_timeout",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupListener(t)
			due := b.listenerHook(t, fixture.Project{ActiveKey: "whsec_one"})
			got := b.answer(t, due.GetProjectId(), tc.answer)

			require.NoError(t, b.handle(t, b.handler, due))

			require.Len(t, got, 1, "one request to the gateway")
			sent := <-got
			require.Empty(t, b.receiver.Received(), "nothing is POSTed to the domain")
			res := fixture.LastResult(t, b.js)
			require.NotNil(t, res)
			require.Equal(t, due.GetHookId(), res.GetHookId())
			require.EqualValues(t, 2, res.GetAttempt())
			require.EqualValues(t, 7, res.GetLeaseSeq())
			require.Equal(t, tc.outcome, res.GetOutcome())
			require.Equal(t, tc.err, res.GetError())
			wantClass := eventv1.FailureClass_FAILURE_CLASS_UNSPECIFIED
			if tc.outcome == eventv1.Outcome_OUTCOME_FAILURE {
				wantClass = eventv1.FailureClass_FAILURE_CLASS_LISTENER
			}
			require.Equal(t, wantClass, res.GetFailureClass())
			require.Equal(t, tc.timeout, res.GetAsyncTimeoutSeconds())
			require.Zero(t, res.GetStatusCode(), "no HTTP exchange")
			require.Empty(t, res.GetResponseExcerpt())
			require.WithinDuration(t, time.Now(), res.GetStartedAt().AsTime(), time.Minute)
			// The attempt records the headers the listener got (no Host:
			// no HTTP request), its async URLs' token redacted, and no
			// answer's headers.
			recorded := map[string]string{}
			for _, f := range res.GetRequestHeaders().GetFields() {
				recorded[f.GetName()] = strings.Join(f.GetValues(), ", ")
			}
			require.Len(t, recorded, len(sent.GetHeaders()))
			require.Equal(t, sent.GetHeaders()["Sundial-Signature"], recorded["Sundial-Signature"])
			parts := strings.Split(sent.GetAckUrl(), "/")
			token := parts[len(parts)-2]
			require.Equal(t, strings.Replace(sent.GetAckUrl(), token, "[redacted]", 1), recorded["Sundial-Ack-URL"])
			require.Nil(t, res.GetResponseHeaders())
		})
	}
}

func TestUnreachableListenerDefersTheHook(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]func(b listenerBundle, t *testing.T, projectID string){
		"no responders": func(listenerBundle, *testing.T, string) {},
		"gone": func(b listenerBundle, t *testing.T, projectID string) {
			b.answer(t, projectID, &eventv1.ListenerAnswer{Kind: eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_GONE})
		},
		"no reply in time": func(b listenerBundle, t *testing.T, projectID string) {
			b.answer(t, projectID, nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupListener(t)
			due := b.listenerHook(t, fixture.Project{ActiveKey: "whsec_one"})
			answer(b, t, due.GetProjectId())

			require.NoError(t, b.handle(t, b.handler, due))

			require.Empty(t, b.receiver.Received(), "nothing is POSTed to the domain")
			res := fixture.LastResult(t, b.js)
			require.NotNil(t, res)
			require.Equal(t, due.GetHookId(), res.GetHookId())
			require.Equal(t, eventv1.Outcome_OUTCOME_DEFERRED, res.GetOutcome())
			require.Equal(t, time.Second, res.GetDeferFor().AsDuration())
		})
	}
}

func TestAListenerDeliveryIsTheHTTPSDelivery(t *testing.T) {
	t.Parallel()
	b := setupListener(t)
	project := fixture.Project{ActiveKey: "whsec_new", Retiring: []fixture.Key{{Secret: "whsec_old", ExpiresIn: time.Hour}},
		Authorization: "Bearer receiver-secret"}
	due := b.listenerHook(t, project)
	got := b.answer(t, due.GetProjectId(), &eventv1.ListenerAnswer{Kind: eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK})
	require.NoError(t, b.handle(t, b.handler, due))
	require.Len(t, got, 1)
	d := <-got
	// The same hook under the same lease, to the domain.
	https := proto.Clone(due).(*eventv1.DueHook)
	https.Listener = false
	require.NoError(t, b.handle(t, b.handler, https))
	post := b.receiver.WaitFor(t, 1)[0]

	require.Equal(t, due.GetHookId(), d.GetHookId())
	require.Equal(t, due.GetProjectId(), d.GetProjectId())
	require.Equal(t, due.GetAttempt(), d.GetAttempt())
	require.Equal(t, due.GetMaxAttempts(), d.GetMaxAttempts())
	require.Equal(t, due.GetPath(), d.GetPath())
	require.Equal(t, due.GetData(), d.GetData())
	require.True(t, proto.Equal(due.GetPostAt(), d.GetPostAt()))
	require.Equal(t, d.GetPostedAt().AsTime().Unix(), d.GetTimestamp())

	// The body differs from the POST's only by its postedAt (each is
	// signed when it goes out) and is the listener delivery's own.
	postedAt := regexp.MustCompile(`"postedAt":"[^"]*"`)
	require.Equal(t, postedAt.ReplaceAllString(string(post.Body), ""), postedAt.ReplaceAllString(string(d.GetBody()), ""))
	require.Contains(t, string(d.GetBody()), `"postedAt":"`+d.GetPostedAt().AsTime().UTC().Format(time.RFC3339Nano)+`"`)

	// Every header of the POST, with the same values but for the
	// signature's time, and signed by both keys over the body sent.
	headers := d.GetHeaders()
	names := map[string]bool{}
	for name := range headers {
		names[http.CanonicalHeaderKey(name)] = true
	}
	delivered := 0
	for name := range post.Header {
		if name == "Content-Length" || name == "Accept-Encoding" {
			continue // set by the HTTP transport, not by the delivery
		}
		require.True(t, names[name], name)
		delivered++
	}
	require.Len(t, names, delivered, "no header the POST lacks")
	for _, name := range []string{"Sundial-Id", "User-Agent", "Content-Type", "Authorization", "Sundial-Ack-URL", "Sundial-Nack-URL"} {
		require.Equal(t, post.Header.Get(name), headers[name], name)
	}
	require.Equal(t, d.GetAckUrl(), headers["Sundial-Ack-URL"])
	require.Equal(t, d.GetNackUrl(), headers["Sundial-Nack-URL"])
	ts := headers["Sundial-Timestamp"]
	require.Equal(t, strconv.FormatInt(d.GetTimestamp(), 10), ts)
	for _, key := range []string{"whsec_new", "whsec_old"} {
		require.True(t, signing.Verify(key, headers["Sundial-Signature"], ts, d.GetBody(), time.Now(), time.Minute), key)
	}
	require.Equal(t, signing.Legacy("whsec_new", d.GetBody()), headers["X-Sundial-Signature"])
}

// TestListenerDeliveriesNeedTheListenersTimeLeftOnTheLease: a listener
// delivery takes up to ListenerTimeout (12 s by default, more than the 5 s
// HTTPS timeout here), so a lease with less left, plus the time to report,
// defers the hook instead of delivering it.
func TestListenerDeliveriesNeedTheListenersTimeLeftOnTheLease(t *testing.T) {
	t.Parallel()
	b := setupListenerWith(t, dispatch.DefaultListenerTimeout)
	due := b.listenerHook(t, fixture.Project{ActiveKey: "k"})
	got := b.answer(t, due.GetProjectId(), &eventv1.ListenerAnswer{Kind: eventv1.ListenerAnswerKind_LISTENER_ANSWER_KIND_ACK})
	due.LeaseDuration = durationpb.New(time.Minute)
	// Enough for an HTTPS delivery (5 s + 2 s), not for the listener's.
	due.LeaseExpiresAt = timestamppb.New(time.Now().Add(10 * time.Second))

	require.NoError(t, b.handle(t, b.handler, due))

	require.Empty(t, got)
	res := fixture.LastResult(t, b.js)
	require.NotNil(t, res)
	require.Equal(t, eventv1.Outcome_OUTCOME_DEFERRED, res.GetOutcome())
}

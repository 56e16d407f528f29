package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/cli"
	https "github.com/sundial-run/sundial/testkit/receiver"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/testkit/smtptest"
	"github.com/sundial-run/sundial/tests/internal/apiclient"
)

// Notifications end to end (docs/notifications.md): the scheduler and the
// gateway write alerts, the notifier groups them and sends them to the
// project's channels, which are HTTPS receivers and SMTP servers started
// here. One CA signs every test receiver's certificate, so the suite
// receiver's CA file (SUNDIAL_DELIVERY_CA_FILE) trusts the channels' too.

// notifySetup boots a suite whose notifier polls often and whose scheduler
// and notifier have extra environment (the operator's SMTP server, say).
func notifySetup(t *testing.T, statuses []int, env map[string]string) *bundle {
	t.Helper()
	b := setup(t, options{statuses: statuses, without: map[string]bool{"scheduler": true, "notifier": true}})
	b.env["SUNDIAL_NOTIFIER_POLL_INTERVAL"] = "100ms"
	for k, v := range env {
		b.env[k] = v
	}
	b.start(t, "scheduler")
	b.start(t, "notifier")
	return b
}

// inbox is an HTTPS receiver of alert messages (a chat webhook or a custom
// webhook channel): it records every POST and answers 200.
type inbox struct {
	srv *https.Receiver
	mu  sync.Mutex
	got []received
}

func newInbox(t *testing.T) *inbox {
	t.Helper()
	in := &inbox{}
	in.srv = https.StartT(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		in.mu.Lock()
		in.got = append(in.got, received{Header: r.Header.Clone(), Body: body, At: time.Now()})
		in.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}), https.Options{})
	return in
}

func (in *inbox) URL(path string) string { return in.srv.URL() + path }

func (in *inbox) Received() []received {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.got)
}

// wait waits until at least n messages arrived and returns them all.
func (in *inbox) wait(t *testing.T, n int, within time.Duration) []received {
	t.Helper()
	require.Eventually(t, func() bool { return len(in.Received()) >= n }, within, 50*time.Millisecond,
		"%d messages expected at %s", n, in.srv.URL())
	return in.Received()
}

// switchable is an HTTPS endpoint that answers every delivery with the
// status it is set to.
type switchable struct {
	srv    *https.Receiver
	status atomic.Int32
	hits   atomic.Int32
}

func newSwitchable(t *testing.T, status int) *switchable {
	t.Helper()
	s := &switchable{}
	s.status.Store(int32(status))
	s.srv = https.StartT(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.hits.Add(1)
		w.WriteHeader(int(s.status.Load()))
	}), https.Options{})
	return s
}

func (s *switchable) Domain() string { return s.srv.Addr() }

// notifiedHook is the API's view of a hook, as far as notifications go.
type notifiedHook struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	WasNotified bool   `json:"wasNotified"`
}

// channelView is the API's view of a channel, as far as these tests look.
type channelView struct {
	ID     string   `json:"id"`
	Type   string   `json:"type"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Health struct {
		Status string `json:"status"`
	} `json:"health"`
}

// channelSend is one try of a send, as GET /v1/channels/{id}/sends lists it.
type channelSend struct {
	GroupID string `json:"groupId"`
	Kind    string `json:"kind"`
	Attempt int    `json:"attempt"`
	Outcome string `json:"outcome"`
	Error   string `json:"error"`
}

// newProject creates another project delivering to domain and returns its
// client of the suite's gateway and its credentials.
func (b *bundle) newProject(t *testing.T, name, domain string) (apiclient.Client, gateway.Credentials) {
	t.Helper()
	creds, err := gateway.CreateProject(b.ctx, gateway.Database{URL: b.env["SUNDIAL_DATABASE_URL"], SecretKeys: secrettest.Keys}, name, domain)
	require.NoError(t, err)
	return apiclient.Client{BaseURL: b.baseURL, APIKey: creds.APIKey, HTTP: b.client}, creds
}

// setPlan sets a project's quota through the operator's CLI, and lifts its
// rate limit so that hooks can be created as fast as the gateways take them.
func (b *bundle) setPlan(t *testing.T, projectID string, quota int) {
	t.Helper()
	var out strings.Builder
	env := cli.Env{Stdout: &out, Stderr: &out, Lookup: envconf.Map(b.env)}
	args := []string{"admin", "set-plan", "--project", projectID, "--quota", strconv.Itoa(quota),
		"--rate-limit", "100000", "--rate-burst", "100000"}
	require.Equal(t, cli.ExitOK, cli.Run(b.ctx, args, env), "set-plan: %s", out.String())
}

func patchProject(t *testing.T, api apiclient.Client, body map[string]any) {
	t.Helper()
	resp, raw := api.Do(t, http.MethodPatch, "/v1/project", body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "PATCH /v1/project: %s", raw)
}

func createChannel(t *testing.T, api apiclient.Client, body map[string]any) channelView {
	t.Helper()
	resp, raw := api.Do(t, http.MethodPost, "/v1/channels", body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /v1/channels: %s", raw)
	var out struct{ Data channelView }
	require.NoError(t, json.Unmarshal(raw, &out))
	require.NotEmpty(t, out.Data.ID)
	return out.Data
}

func channelSends(t *testing.T, api apiclient.Client, id string) []channelSend {
	t.Helper()
	resp, raw := api.Do(t, http.MethodGet, "/v1/channels/"+id+"/sends", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET sends: %s", raw)
	var out struct{ Data []channelSend }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

// waitSends waits until the channel's sends are n tries, all sent.
func waitSends(t *testing.T, api apiclient.Client, id string, n int) []channelSend {
	t.Helper()
	var sends []channelSend
	require.Eventually(t, func() bool {
		sends = channelSends(t, api, id)
		sent := 0
		for _, s := range sends {
			if s.Outcome == "sent" {
				sent++
			}
		}
		return sent >= n
	}, 30*time.Second, 100*time.Millisecond, "%d sent tries expected on channel %s", n, id)
	require.Len(t, sends, n, "every send went out at its first try, once: %+v", sends)
	return sends
}

func getNotifiedHook(t *testing.T, api apiclient.Client, id string) notifiedHook {
	t.Helper()
	resp, raw := api.Do(t, http.MethodGet, "/v1/hooks/"+id, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/hooks/%s: %s", id, raw)
	var out struct{ Data notifiedHook }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

// waitAllHooks waits until every hook satisfies ok.
func waitAllHooks(t *testing.T, api apiclient.Client, ids []string, what string, ok func(notifiedHook) bool) {
	t.Helper()
	pending := slices.Clone(ids)
	require.Eventually(t, func() bool {
		pending = slices.DeleteFunc(pending, func(id string) bool { return ok(getNotifiedHook(t, api, id)) })
		return len(pending) == 0
	}, 60*time.Second, 200*time.Millisecond, "hooks never %s: %v", what, pending)
}

func chatText(t *testing.T, r received) string {
	t.Helper()
	var msg struct {
		Text string `json:"text"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &msg), "chat body %s", r.Body)
	require.NotEmpty(t, msg.Text)
	return msg.Text
}

func TestFailuresOnOneEndpointAreOneChatMessageThenOneRecovery(t *testing.T) {
	t.Parallel()
	// 50 failures within the breaker's span of 3 s are not a pause; on a
	// loaded machine they could span more, and a pause would add its own
	// messages (breaker_test.go tests those).
	b := notifySetup(t, nil, map[string]string{"SUNDIAL_SCHEDULER_BREAKER_FAILURES": "1000"})
	endpoint := newSwitchable(t, http.StatusInternalServerError)
	chat := newInbox(t)
	api, creds := b.newProject(t, "notify-chat", endpoint.Domain())
	// The test polls 50 hooks' states: lift the default 100 requests/s.
	b.setPlan(t, creds.ProjectID, 1_000_000)
	patchProject(t, api, map[string]any{
		"retryPolicy": map[string]any{"minRetries": 0},
		// Long enough that the 50 failures fall inside one group even on a
		// loaded CI machine, where deferrals to the failing domain spread
		// their deliveries over more than 20 s.
		"alerts": map[string]any{"groupWaitSecs": 45},
	})
	const token = "T000/B000/s3cr3t-t0ken"
	ch := createChannel(t, api, map[string]any{"name": "ops chat", "type": "chat", "url": chat.URL("/services/" + token)})
	require.NotContains(t, ch.URL, "s3cr3t", "the chat URL's token is never shown")

	// 50 hooks due at the same moment, each failing at its only attempt:
	// their failures arrive well within the group wait.
	postAt := time.Now().Add(5 * time.Second).UTC().Format(time.RFC3339Nano)
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = apiclient.Schedule[notifiedHook](t, api, map[string]any{
			"path": "/orders", "postAt": postAt, "data": map[string]any{"n": i},
		}).ID
	}
	waitAllHooks(t, api, ids, "failed", func(h notifiedHook) bool { return h.Status == "failed" })

	text := chatText(t, chat.wait(t, 1, 60*time.Second)[0])
	t.Logf("failure message:\n%s", text)
	require.Contains(t, text, "notify-chat", "names the project")
	require.Contains(t, text, "50 hooks", "counts the failures")
	require.Contains(t, text, endpoint.Domain()+"/orders", "names the endpoint")
	waitAllHooks(t, api, ids, "notified", func(h notifiedHook) bool { return h.WasNotified })

	// The endpoint works again: the next success is one recovery message.
	endpoint.status.Store(http.StatusOK)
	ok := apiclient.Schedule[notifiedHook](t, api, map[string]any{"path": "/orders", "postIn": "1s", "data": map[string]any{"ok": true}})
	waitAllHooks(t, api, []string{ok.ID}, "completed", func(h notifiedHook) bool { return h.Status == "completed" })
	got := chat.wait(t, 2, 60*time.Second)
	recovered := chatText(t, got[1])
	t.Logf("recovery message:\n%s", recovered)
	require.Contains(t, recovered, "recovered")
	require.Contains(t, recovered, endpoint.Domain()+"/orders")
	require.Contains(t, recovered, "notify-chat")

	sends := waitSends(t, api, ch.ID, 2)
	kinds := []string{sends[0].Kind, sends[1].Kind}
	require.ElementsMatch(t, []string{"hook.failed", "endpoint.recovered"}, kinds)
	require.Len(t, chat.Received(), 2, "one failure message and one recovery message")
	require.GreaterOrEqual(t, endpoint.hits.Load(), int32(51))
}

// mailSubject is a received message's decoded Subject header; it also
// checks that the message has a plain-text and an HTML part.
func mailSubject(t *testing.T, m smtptest.Message) string {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	require.NoError(t, err)
	mediaType, _, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/alternative", mediaType)
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	require.NoError(t, err)
	return subject
}

func TestQuotaThresholdsAreMailedOnceEachAcrossGateways(t *testing.T) {
	t.Parallel()
	operator := smtptest.Start(t, smtptest.Options{})
	mailbox := smtptest.Start(t, smtptest.Options{})
	b := notifySetup(t, nil, map[string]string{
		"SUNDIAL_NOTIFIER_SMTP_HOST": operator.Host,
		"SUNDIAL_NOTIFIER_SMTP_PORT": strconv.Itoa(operator.Port),
		"SUNDIAL_NOTIFIER_SMTP_TLS":  "none",
		"SUNDIAL_NOTIFIER_SMTP_FROM": "usage@sundial.test",
	})
	first := b.api()
	b.start(t, "gateway")
	second := b.api()
	require.NotEqual(t, first.BaseURL, second.BaseURL)

	const quota = 20 // thresholds at 15, 20 and 30 hooks; the hard cap (200 %) at 40
	b.setPlan(t, b.creds.ProjectID, quota)
	owners := []string{"owner@acme.test", "billing@acme.test"}
	patchProject(t, first, map[string]any{"alerts": map[string]any{"ownerEmails": owners}})
	ch := createChannel(t, first, map[string]any{
		"name": "team mail", "type": "email", "events": []string{"quota.threshold"},
		"email": map[string]any{"host": mailbox.Host, "port": mailbox.Port, "tls": "none",
			"from": "alerts@sundial.test", "to": []string{"team@acme.test"}},
	})

	// 36 hooks (180 %), created at once through both gateways.
	const perWorker, workers = 9, 4
	statuses := make(chan int, perWorker*workers)
	var wg sync.WaitGroup
	for w := range workers {
		api := []apiclient.Client{first, second}[w%2]
		wg.Go(func() {
			for i := range perWorker {
				resp, _, err := api.Send(http.MethodPost, "/v1/hooks", map[string]any{
					"path": "/usage", "postIn": "1h", "data": map[string]any{"worker": w, "i": i},
				})
				if err != nil {
					statuses <- -1
					continue
				}
				statuses <- resp.StatusCode
			}
		})
	}
	wg.Wait()
	close(statuses)
	for status := range statuses {
		require.Equal(t, http.StatusCreated, status)
	}

	ownerMail := operator.Wait(t, 3)
	teamMail := mailbox.Wait(t, 3)
	waitSends(t, first, ch.ID, 3)
	require.Len(t, operator.Messages(), 3, "one owner e-mail per threshold")
	require.Len(t, mailbox.Messages(), 3, "one channel e-mail per threshold")
	var ownerSubjects, teamSubjects []string
	for _, m := range ownerMail {
		require.Equal(t, "usage@sundial.test", m.From)
		require.ElementsMatch(t, owners, m.To)
		ownerSubjects = append(ownerSubjects, mailSubject(t, m))
	}
	for _, m := range teamMail {
		require.Equal(t, "alerts@sundial.test", m.From)
		require.Equal(t, []string{"team@acme.test"}, m.To)
		teamSubjects = append(teamSubjects, mailSubject(t, m))
	}
	for _, subjects := range [][]string{ownerSubjects, teamSubjects} {
		for _, percent := range []string{"75%", "100%", "150%"} {
			n := 0
			for _, s := range subjects {
				require.Contains(t, s, "e2e", "the subject names the project")
				if strings.Contains(s, " "+percent+" ") {
					n++
				}
			}
			require.Equal(t, 1, n, "one e-mail for %s: %q", percent, subjects)
		}
	}
}

// alertDocument is the AlertNotification a webhook channel receives.
type alertDocument struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	Type    string `json:"type"`
	Project struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"project"`
	Total        int    `json:"total"`
	DashboardURL string `json:"dashboardUrl"`
	Alerts       []struct {
		ID       string `json:"id"`
		HookID   string `json:"hookId"`
		Domain   string `json:"domain"`
		Path     string `json:"path"`
		Error    string `json:"error"`
		Attempts int    `json:"attempts"`
	} `json:"alerts"`
}

// verifyAlertSignature checks a webhook channel's message as a receiver
// would, from the specification: one of the space-separated "v1,<hex>"
// entries of Sundial-Signature is the HMAC-SHA256 of "<timestamp>.<body>"
// under the project's signing key.
func verifyAlertSignature(t *testing.T, key string, r received) {
	t.Helper()
	ts := r.Header.Get("Sundial-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), time.Unix(sec, 0), 5*time.Minute)
	want := "v1," + hmacHex(key, []byte(ts+"."+string(r.Body)))
	require.Contains(t, strings.Fields(r.Header.Get("Sundial-Signature")), want)
	require.Equal(t, hmacHex(key, r.Body), r.Header.Get("X-Sundial-Signature"))
	require.True(t, strings.HasPrefix(r.Header.Get("User-Agent"), "Sundial/"), r.Header.Get("User-Agent"))
	require.Equal(t, "application/json", strings.Split(r.Header.Get("Content-Type"), ";")[0])
}

func TestWebhookChannelGetsSignedDocuments(t *testing.T) {
	t.Parallel()
	b := notifySetup(t, []int{http.StatusInternalServerError}, nil)
	receiver := newInbox(t)
	api := b.api()
	patchProject(t, api, map[string]any{
		"retryPolicy": map[string]any{"minRetries": 0},
		"alerts":      map[string]any{"groupWaitSecs": 0},
	})
	ch := createChannel(t, api, map[string]any{"name": "pager bridge", "type": "webhook", "url": receiver.URL("/sundial")})
	require.Equal(t, receiver.URL("/sundial"), ch.URL, "a webhook's URL is shown in full")

	// A send test reaches the channel.
	resp, raw := api.Do(t, http.MethodPost, "/v1/channels/"+ch.ID+"/test", nil)
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, resp.StatusCode, "test: %s", raw)
	var test struct {
		Data struct {
			Outcome string `json:"outcome"`
		}
	}
	require.NoError(t, json.Unmarshal(raw, &test))
	require.Contains(t, []string{"sent", "pending"}, test.Data.Outcome)
	receiver.wait(t, 1, 30*time.Second)

	// A hook's only attempt fails: the failure is the next document.
	failed := b.schedule(t, map[string]any{"path": "/broken", "postIn": "1s", "data": map[string]any{"n": 1}})
	b.waitStatus(t, failed.ID, "failed", 30*time.Second)
	got := receiver.wait(t, 2, 60*time.Second)

	docs := map[string]alertDocument{}
	for _, r := range got {
		verifyAlertSignature(t, b.creds.SigningKey, r)
		var doc alertDocument
		require.NoError(t, json.Unmarshal(r.Body, &doc), "document %s", r.Body)
		require.Equal(t, 1, doc.Version)
		require.Equal(t, r.Header.Get("Sundial-Id"), doc.ID, "Sundial-Id is the group id")
		require.Equal(t, b.creds.ProjectID, doc.Project.ID)
		require.Equal(t, "e2e", doc.Project.Name)
		require.Contains(t, doc.DashboardURL, b.creds.ProjectID)
		require.NotContains(t, docs, doc.Type, "one document of each kind")
		docs[doc.Type] = doc
	}
	require.Contains(t, docs, "channel.test")
	doc, ok := docs["hook.failed"]
	require.True(t, ok, "documents: %v", docs)
	require.Equal(t, 1, doc.Total)
	require.Len(t, doc.Alerts, 1)
	a := doc.Alerts[0]
	require.True(t, strings.HasPrefix(a.ID, fmt.Sprintf("hook.failed:%s:", failed.ID)), a.ID)
	require.Equal(t, failed.ID, a.HookID)
	require.Equal(t, b.receiver.Domain(), a.Domain)
	require.Equal(t, "/broken", a.Path)
	require.Equal(t, "HTTP 500", a.Error)
	require.Equal(t, 1, a.Attempts)
	waitAllHooks(t, api, []string{failed.ID}, "notified", func(h notifiedHook) bool { return h.WasNotified })
}

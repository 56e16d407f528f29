package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/api"
	"github.com/sundial-run/sundial/services/gateway/internal/asyncanswer"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// asyncBundle serves the API with the real async answers on a real
// database. Hooks are put in the states the scheduler would give them with
// the store's ...ForTest queries (the scheduler is another module).
type asyncBundle struct {
	t       testing.TB
	base    string
	client  *http.Client
	raw     *http.Client
	q       *store.Queries
	tq      *storetest.Queries
	project uuid.UUID
	secret  []byte
	logs    *logtest.Buffer
}

func asyncSetup(t testing.TB) asyncBundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)
	q := store.New(pool)
	sealed, err := storetest.New(pool).AsyncSecretForTest(t.Context(), created.ID)
	require.NoError(t, err)
	secret, err := secrettest.Keyring().Open(secretbox.Label(secretbox.ProjectAsyncSecret, created.ID), sealed)
	require.NoError(t, err)
	logs := &logtest.Buffer{}
	handler := api.New(api.Deps{
		Config: api.Config{HeaderPrefix: "Sundial", MaxDataBytes: 1024},
		Log:    slog.New(slog.NewJSONHandler(logs, nil)),
		Async:  api.AsyncDeps{Answers: asyncanswer.NewService(pool, secrettest.Keyring())},
	})
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	return asyncBundle{t: t, base: server.URL, client: contract.Client(t), raw: server.Client(), q: q, tq: storetest.New(pool),
		project: created.ID, secret: secret, logs: logs}
}

// hook creates a hook due now.
func (b asyncBundle) hook() uuid.UUID {
	b.t.Helper()
	h, err := b.q.InsertHooks(b.t.Context(), store.InsertHooksParams{
		Ids: []string{uuid.Must(uuid.NewV7()).String()}, ProjectIds: []string{b.project.String()}, Paths: []string{"/p"},
		Datas: []string{`{}`}, PostAts: []time.Time{time.Now()}, PostInSeconds: []int64{-1}, RetryOverrides: []string{""},
	})
	require.NoError(b.t, err)
	require.Len(b.t, h, 1)
	return h[0].ID
}

// lease puts the hook in flight under a new lease, as a claim does.
func (b asyncBundle) lease(id uuid.UUID) int64 {
	b.t.Helper()
	lease, err := b.tq.LeaseHookForTest(b.t.Context(), id)
	require.NoError(b.t, err)
	return lease
}

// waiting returns a hook whose delivery under the returned lease was
// answered 202 and applied, as the scheduler applies it.
func (b asyncBundle) waiting() (uuid.UUID, int64) {
	b.t.Helper()
	id := b.hook()
	lease := b.lease(id)
	require.NoError(b.t, b.tq.StartWaitForTest(b.t.Context(), storetest.StartWaitForTestParams{HookID: id, TimeoutSeconds: 300}))
	return id, lease
}

func (b asyncBundle) get(id uuid.UUID) store.Hook {
	b.t.Helper()
	h, err := b.q.GetHook(b.t.Context(), store.GetHookParams{ProjectID: b.project, ID: id})
	require.NoError(b.t, err)
	return h
}

func (b asyncBundle) attempts(id uuid.UUID) []storetest.HookAttempt {
	b.t.Helper()
	rows, err := b.tq.AttemptsForTest(b.t.Context(), id)
	require.NoError(b.t, err)
	return rows
}

func (b asyncBundle) url(kind string, id uuid.UUID, lease int64) string {
	ack, nack := asyncurl.URLs(b.base, b.secret, id, lease)
	if kind == "ack" {
		return ack
	}
	return nack
}

type answer struct {
	status int
	// data is the 200 answer's status, or the error's code.
	data    string
	message string
	field   string
}

// post answers with no API key, as a receiver does; contentType "" sends
// none. Every exchange but those without a Content-Type is checked against
// the document.
func (b asyncBundle) post(url, contentType, body string) answer {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(b.t, err)
	client := b.raw
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
		client = b.client
	}
	res, err := client.Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	var out struct {
		Data    struct{ Status string }
		Error   string
		Code    string
		Details []struct{ Field string }
	}
	require.NoError(b.t, json.Unmarshal(raw, &out), "%s", raw)
	a := answer{status: res.StatusCode, data: out.Data.Status, message: out.Error}
	if res.StatusCode != http.StatusOK {
		a.data = out.Code
	}
	if len(out.Details) > 0 {
		a.field = out.Details[0].Field
	}
	return a
}

const jsonType = "application/json"

// TestAckIsRecordedForTheScheduler: the gateway records the ack and the
// body on the attempt and leaves the hook to a scheduler, which completes
// it (services/scheduler/internal/result's async tests, tests/e2e).
func TestAckIsRecordedForTheScheduler(t *testing.T) {
	t.Parallel()
	b := asyncSetup(t)
	id, lease := b.waiting()
	before := b.get(id)
	require.Equal(t, "pending", before.Status)

	got := b.post(b.url("ack", id, lease), jsonType, `{"processed": 42, "note": "ok"}`)
	require.Equal(t, answer{status: 200, data: "completed"}, got)
	require.Equal(t, before, b.get(id), "the hook is the scheduler's to complete")
	attempts := b.attempts(id)
	require.Len(t, attempts, 1)
	require.Equal(t, "acked", *attempts[0].AsyncState)
	require.True(t, attempts[0].AnswerPending, "waits for a scheduler")
	require.EqualValues(t, 202, *attempts[0].StatusCode)
	require.JSONEq(t, `{"processed": 42, "note": "ok"}`, string(attempts[0].AckBody))

	// Repeats change nothing: the first answer wins, and until a scheduler
	// has applied it they report what it decided (completed).
	require.Equal(t, answer{status: 200, data: "completed"}, b.post(b.url("ack", id, lease), jsonType, `{"again": true}`))
	require.Equal(t, answer{status: 200, data: "completed"}, b.post(b.url("nack", id, lease), "", ""))
	require.Equal(t, attempts, b.attempts(id))
	require.Equal(t, before, b.get(id))
}

func TestNackEndsTheWaitForTheScheduler(t *testing.T) {
	t.Parallel()
	b := asyncSetup(t)
	id, lease := b.waiting()
	require.Equal(t, answer{status: 200, data: "nacked"}, b.post(b.url("nack", id, lease), "", ""))

	h := b.get(id)
	require.Equal(t, "pending", h.Status, "a scheduler applies the nack")
	a := b.attempts(id)[0]
	require.Equal(t, "nacked", *a.AsyncState)
	require.True(t, a.AnswerPending, "waits for a scheduler")
	require.NotNil(t, a.AsyncDeadline)
	require.False(t, a.AsyncDeadline.After(time.Now().Add(time.Second)), "the wait ends now")
	require.Nil(t, a.AckBody, "no body, nothing kept")

	require.Equal(t, answer{status: 200, data: "pending"}, b.post(b.url("nack", id, lease), jsonType, `"again"`))
	require.Equal(t, answer{status: 200, data: "pending"}, b.post(b.url("ack", id, lease), jsonType, `{}`))
	require.Equal(t, "nacked", *b.attempts(id)[0].AsyncState, "an ack after the nack changes nothing")
}

func TestUnknownHookAndWrongTokenAreTheSame404(t *testing.T) {
	t.Parallel()
	b := asyncSetup(t)
	id, lease := b.waiting()
	want := b.post(b.url("ack", uuid.Must(uuid.NewV7()), 1), jsonType, `{}`)
	require.Equal(t, http.StatusNotFound, want.status)
	require.Equal(t, "not_found", want.data)

	good := b.url("ack", id, lease)
	token := asyncurl.Token(b.secret, id, lease)
	for name, url := range map[string]string{
		"malformed id":      strings.Replace(good, id.String(), "not-a-hook", 1),
		"another token":     strings.Replace(good, token, asyncurl.Token([]byte("not the project's secret, 32 byte"), id, lease), 1),
		"a token cut short": strings.Replace(good, token, token[:20], 1),
		"a future lease":    b.url("ack", id, lease+1),
	} {
		require.Equal(t, want, b.post(url, jsonType, `{}`), name)
	}
	require.Equal(t, "pending", b.get(id).Status, "nothing was answered")

	// A deleted hook: its URLs are 404 too.
	n, err := b.q.DeleteHook(t.Context(), store.DeleteHookParams{ProjectID: b.project, ID: id})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, want, b.post(good, jsonType, `{}`))
}

func TestURLOfAnEarlierDeliveryIs409(t *testing.T) {
	t.Parallel()
	b := asyncSetup(t)
	id := b.hook()
	first := b.lease(id)
	second := b.lease(id) // the first delivery's lease expired; the hook was re-driven
	got := b.post(b.url("ack", id, first), jsonType, `{}`)
	require.Equal(t, http.StatusConflict, got.status)
	require.Equal(t, "conflict", got.data)
	require.Contains(t, got.message, "earlier delivery")
	h := b.get(id)
	require.Equal(t, "pending", h.Status)
	require.Equal(t, second, h.LeaseSeq)
	require.Empty(t, b.attempts(id))
}

func TestAnswerAfterTheTimeoutIs410(t *testing.T) {
	t.Parallel()
	b := asyncSetup(t)
	id, lease := b.waiting()
	n, err := b.tq.ExpireWaitForTest(t.Context(), id)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	before := b.get(id)
	for _, kind := range []string{"ack", "nack"} {
		got := b.post(b.url(kind, id, lease), jsonType, `{}`)
		require.Equal(t, http.StatusGone, got.status, kind)
		require.Equal(t, "gone", got.data, kind)
		require.Contains(t, got.message, "async timeout", kind)
	}
	require.Equal(t, before, b.get(id), "the scheduler settles the timeout")
	require.Equal(t, "waiting", *b.attempts(id)[0].AsyncState)
}

// TestAnswerBeforeTheResult: the receiver calls the URL before it has
// answered the delivery (or before the scheduler has applied its 202). The
// attempt in flight is recorded with the answer, for a scheduler to settle
// (it does, whether the 202 result comes first or not: the scheduler's
// async tests); the hook is left as it is.
func TestAnswerBeforeTheResult(t *testing.T) {
	t.Parallel()
	b := asyncSetup(t)

	id := b.hook()
	lease := b.lease(id)
	before := b.get(id)
	require.Equal(t, answer{status: 200, data: "completed"}, b.post(b.url("ack", id, lease), jsonType, `[1, 2]`))
	require.Equal(t, before, b.get(id), "the hook is the scheduler's to change")
	attempts := b.attempts(id)
	require.Len(t, attempts, 1)
	require.EqualValues(t, 1, attempts[0].Attempt, "the attempt in flight")
	require.Equal(t, lease, attempts[0].LeaseSeq)
	require.Equal(t, "acked", *attempts[0].AsyncState)
	require.EqualValues(t, 202, *attempts[0].StatusCode)
	require.True(t, attempts[0].AnswerPending)
	require.JSONEq(t, `[1, 2]`, string(attempts[0].AckBody))
	require.Equal(t, answer{status: 200, data: "completed"}, b.post(b.url("nack", id, lease), "", ""),
		"a repeat: the first answer wins")

	id = b.hook()
	lease = b.lease(id)
	require.Equal(t, answer{status: 200, data: "nacked"}, b.post(b.url("nack", id, lease), "", ""))
	require.Equal(t, "pending", b.get(id).Status)
	a := b.attempts(id)[0]
	require.Equal(t, "nacked", *a.AsyncState)
	require.True(t, a.AnswerPending)
	require.False(t, a.AsyncDeadline.After(time.Now().Add(time.Second)), "the wait ends now")
}

func TestAnswerBodies(t *testing.T) {
	t.Parallel()
	b := asyncSetup(t)
	for _, tc := range []struct {
		name, contentType, body string
		want                    answer
	}{
		{"not JSON", jsonType, `processed!`, answer{status: 400, data: "invalid_request", field: "body"}},
		{"truncated JSON", jsonType, `{"a":`, answer{status: 400, data: "invalid_request", field: "body"}},
		{"NUL character", jsonType, `{"a":"\u0000"}`, answer{status: 400, data: "invalid_request", field: "body"}},
		{"over 64 KiB", jsonType, `"` + strings.Repeat("x", 64<<10) + `"`, answer{status: 413, data: "payload_too_large", field: "body"}},
		{"not JSON's media type", "text/plain", `{}`, answer{status: 415, data: "unsupported_media_type"}},
	} {
		id, lease := b.waiting()
		got := b.post(b.url("ack", id, lease), tc.contentType, tc.body)
		got.message = ""
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, "pending", b.get(id).Status, tc.name)
		require.Equal(t, "waiting", *b.attempts(id)[0].AsyncState, tc.name)
	}

	// Any JSON value up to the limit, with or without Content-Type, or none.
	for _, tc := range []struct{ contentType, body, kept string }{
		{jsonType, `"` + strings.Repeat("x", 64<<10-2) + `"`, `"` + strings.Repeat("x", 64<<10-2) + `"`},
		{"", `{"no": "content type"}`, `{"no": "content type"}`},
		{jsonType + "; charset=utf-8", `null`, `null`},
		{jsonType, ``, ``},
		{"", ``, ``},
	} {
		id, lease := b.waiting()
		require.Equal(t, answer{status: 200, data: "completed"}, b.post(b.url("ack", id, lease), tc.contentType, tc.body), tc.body)
		kept := b.attempts(id)[0].AckBody
		if tc.kept == "" {
			require.Nil(t, kept)
		} else {
			require.JSONEq(t, tc.kept, string(kept))
		}
	}
}

func TestMalformedLeaseIsA400NamingIt(t *testing.T) {
	t.Parallel()
	b := asyncSetup(t)
	id, lease := b.waiting()
	url := strings.Replace(b.url("ack", id, lease), "/"+strconv.FormatInt(lease, 10)+"/", "/first/", 1)
	got := b.post(url, "", "")
	require.Equal(t, http.StatusBadRequest, got.status)
	require.Equal(t, "lease", got.field)
}

// TestTokensAreNeverLogged: the access log names the route, not the URL.
func TestTokensAreNeverLogged(t *testing.T) {
	t.Parallel()
	b := asyncSetup(t)
	id, lease := b.waiting()
	require.Equal(t, 200, b.post(b.url("ack", id, lease), jsonType, `{}`).status)
	logs := b.logs.String()
	require.Contains(t, logs, `"route":"/v1/async/:hookId/:lease/:token/ack"`)
	require.NotContains(t, logs, asyncurl.Token(b.secret, id, lease))
	require.False(t, bytes.Contains([]byte(logs), b.secret))
}

package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

// fast says whether answerHooks' hook i takes the fast path: the first 5
// (new hooks with data of plain ASCII) and 3 after the 3 others.
func fast(i int) bool { return i < 5 || 8 <= i && i < 11 }

// answerHooks are hooks of every shape the batch answer may hold: just
// created (the fast path) with data as PostgreSQL's jsonb writes it, and
// each field or character that sends a hook, or its data, through
// encoding/json instead.
func answerHooks(t *testing.T) []hook.Hook {
	t.Helper()
	at := time.Date(2027, 3, 14, 1, 59, 26, 535897000, time.UTC)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	base := func(data string) hook.Hook {
		return hook.Hook{
			ID: uuid.Must(uuid.NewV7()), ProjectID: uuid.New(), Path: "/webhooks/orders/created", Domain: "receiver.example.com",
			Data: json.RawMessage(data), PostAt: at, Status: "pending", CreatedAt: at.Add(-time.Hour), UpdatedAt: at.Add(-time.Hour),
		}
	}
	failure, try, step, seq := "HTTP 503", at.Add(time.Minute), "second", uuid.New()
	key, orderingKey := "reminder:user-42", "account:42"
	var hooks []hook.Hook
	for _, data := range []string{
		// The fast path's (newFast).
		`{}`, `{"n": 1}`, `{"a": [1, 2.50, {"b": null}], "c": "x y, z: \"q\" \\ \n"}`, `{"a": true, "b": false, "c": -1e+300}`,
		`{"tab": "a\tb", "k": "\u0001 \u003c"}`,
		// encoding/json's.
		`{"html": "<b>&</b>"}`, `{"é": "ü"}`, "{\"sep\": \"\u2028\u2029\"}",
	} {
		hooks = append(hooks, base(data))
	}
	odd := []func(*hook.Hook){
		// The fast path's too (the answer's times are UTC).
		func(h *hook.Hook) { h.PostAt = at.In(paris) },
		func(h *hook.Hook) { h.PostAt = at.Truncate(time.Second) },
		func(h *hook.Hook) { h.Domain = "xn--bcher-kva.example" },
		// encoding/json's.
		func(h *hook.Hook) { h.FailureError, h.Attempts, h.Status, h.TryAt = &failure, 3, "failed", &try },
		func(h *hook.Hook) {
			h.RetryOverride = json.RawMessage(`{"minRetries": 2, "delaySecs": 5, "strategy": "fixed"}`)
		},
		func(h *hook.Hook) { h.SequenceID, h.SequenceStep, h.SequenceLastRunAt = &seq, &step, &at },
		func(h *hook.Hook) { h.WasNotified = true },
		func(h *hook.Hook) { h.PostDurationSeconds = 0.000123 },
		func(h *hook.Hook) { h.Path = "/a?b=<c>&d=é" },
		func(h *hook.Hook) { h.Key = &key },
		func(h *hook.Hook) { h.Tags = []string{"campaign:spring", "user-42"} },
		func(h *hook.Hook) { h.OrderingKey = &orderingKey },
		func(h *hook.Hook) {
			h.Local, h.TZVersion = &hook.LocalTime{Wall: at.Truncate(time.Second), Zone: "Europe/Paris"}, "2025b"
		},
	}
	for _, change := range odd {
		h := base(`{"n": 2}`)
		change(&h)
		hooks = append(hooks, h)
	}
	return hooks
}

// TestHooksCreatedAsGenerated checks the batch answer byte for byte against
// the generated writer's encoding/json, hook by hook and for all at once,
// and that its status and content type are the generated ones.
func TestHooksCreatedAsGenerated(t *testing.T) {
	t.Parallel()
	hooks := answerHooks(t)
	encode := func(hs []hook.Hook) []byte {
		out := gen.HooksResponse{Data: make([]gen.Hook, len(hs))}
		for i, h := range hs {
			out.Data[i] = toHook(h)
		}
		var buf bytes.Buffer
		require.NoError(t, json.NewEncoder(&buf).Encode(out))
		return buf.Bytes()
	}
	for i, h := range hooks {
		got, err := appendHooksResponse(nil, []hook.Hook{h})
		require.NoError(t, err)
		require.Equal(t, string(encode([]hook.Hook{h})), string(got), "hook %d", i)
	}
	want := httptest.NewRecorder()
	require.NoError(t, gen.CreateHooks201JSONResponse{Body: gen.HooksResponse{Data: toHooks(hooks)}}.VisitCreateHooksResponse(want))
	got := httptest.NewRecorder()
	require.NoError(t, hooksCreated{hooks: hooks}.VisitCreateHooksResponse(got))
	require.Equal(t, http.StatusCreated, got.Code)
	require.Equal(t, want.Header().Get("Content-Type"), got.Header().Get("Content-Type"))
	require.Equal(t, want.Body.String(), got.Body.String())
	require.Equal(t, string(encode(hooks)), got.Body.String())
}

// TestAppendNewHookTakesNewHooks checks that a hook just created, with
// plain data, takes the fast path (else the test above proves little).
func TestAppendNewHookTakesNewHooks(t *testing.T) {
	t.Parallel()
	hooks := answerHooks(t)
	for i, h := range hooks {
		_, ok := appendNewHook(nil, toHook(h))
		require.Equal(t, fast(i), ok, "hook %d takes the fast path: %v", i, fast(i))
	}
}

// TestAppendNewHookRefusesEveryOptionalField: a field the fast path does
// not write (one encoding/json leaves out when empty) sends the hook
// through encoding/json when it is set, so that a field added to the Hook
// schema later is never dropped from the batch's answer.
func TestAppendNewHookRefusesEveryOptionalField(t *testing.T) {
	t.Parallel()
	fresh := toHook(answerHooks(t)[0])
	_, ok := appendNewHook(nil, fresh)
	require.True(t, ok, "a new hook takes the fast path")
	typ := reflect.TypeFor[gen.Hook]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !strings.Contains(f.Tag.Get("json"), ",omitempty") {
			continue
		}
		h := fresh
		v := reflect.ValueOf(&h).Elem().Field(i)
		switch v.Kind() {
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Slice, reflect.Map:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
		default:
			t.Fatalf("field %s: set it here, then make appendNewHook refuse it", f.Name)
		}
		_, ok := appendNewHook(nil, h)
		require.False(t, ok, "a hook with %s takes the fast path, which does not write it", f.Name)
	}
}

// TestHooksCreatedRefusesWhatEncodingJSONRefuses checks that a time
// encoding/json cannot write fails the answer as the generated writer's.
func TestHooksCreatedRefusesWhatEncodingJSONRefuses(t *testing.T) {
	t.Parallel()
	h := answerHooks(t)[0]
	h.PostAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Error(t, gen.CreateHooks201JSONResponse{Body: gen.HooksResponse{Data: toHooks([]hook.Hook{h})}}.VisitCreateHooksResponse(httptest.NewRecorder()))
	require.Error(t, hooksCreated{hooks: []hook.Hook{h}}.VisitCreateHooksResponse(httptest.NewRecorder()))
}

func toHooks(hs []hook.Hook) []gen.Hook {
	out := make([]gen.Hook, len(hs))
	for i, h := range hs {
		out[i] = toHook(h)
	}
	return out
}

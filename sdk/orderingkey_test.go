package sundial

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOrderingKeysEscapeTheKeyInThePath: a key's "/", space and "%" travel
// escaped in one path segment, and a free key's null head decodes as nil.
func TestOrderingKeysEscapeTheKeyInThePath(t *testing.T) {
	t.Parallel()
	s := setup(t,
		answer{status: http.StatusOK, body: `{"data":{"key":"account/42 100%","headHookId":null,"held":false,"unfinished":2}}`},
		answer{status: http.StatusOK, body: `{"data":{"key":"account/42 100%","headHookId":null,"held":false,"unfinished":2}}`})
	k, err := s.client.OrderingKeys.Get(context.Background(), "account/42 100%")
	require.NoError(t, err)
	require.Equal(t, OrderingKey{Key: "account/42 100%", Unfinished: 2}, k)
	_, err = s.client.OrderingKeys.Resume(context.Background(), "account/42 100%")
	require.NoError(t, err)
	reqs := s.requests()
	require.Equal(t, http.MethodGet, reqs[0].Method)
	require.Equal(t, "/v1/ordering-keys/account%2F42%20100%25", reqs[0].URL.EscapedPath())
	require.Equal(t, http.MethodPost, reqs[1].Method)
	require.Equal(t, "/v1/ordering-keys/account%2F42%20100%25/resume", reqs[1].URL.EscapedPath())
}

// TestResumeOfAHeldKeyIsNotRetried: a resume that may have gone through
// is not sent again (its repeat would be a 409), and the 409 of a key
// that is not held comes back as it is.
func TestResumeOfAHeldKeyIsNotRetried(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: http.StatusServiceUnavailable, body: `{"error":"busy","code":"unavailable","requestId":"r"}`},
		answer{status: http.StatusConflict, body: `{"error":"ordering key is not held","code":"conflict","requestId":"r"}`})
	_, err := s.client.OrderingKeys.Resume(context.Background(), "k")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
	require.Len(t, s.requests(), 1, "requests: a resume was retried")

	_, err = s.client.OrderingKeys.Resume(context.Background(), "k")
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, CodeConflict, apiErr.Code)
}

func heldPage(keys []string, next string) answer {
	body := `{"data":[`
	for i, k := range keys {
		if i > 0 {
			body += ","
		}
		body += fmt.Sprintf(`{"key":%q,"headHookId":"0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f","held":true,"unfinished":1}`, k)
	}
	body += fmt.Sprintf(`],"meta":{"totalItems":3,"totalItemsCapped":false,"nextCursor":%q}}`, next)
	return answer{status: http.StatusOK, body: body}
}

func TestAllHeldFollowsTheCursor(t *testing.T) {
	t.Parallel()
	s := setup(t, heldPage([]string{"a", "b"}, "c1"), heldPage([]string{"c"}, ""))
	var got []string
	for k, err := range s.client.OrderingKeys.AllHeld(context.Background(), ListOrderingKeysParams{Limit: 2}) {
		require.NoError(t, err)
		require.True(t, k.Held)
		require.Equal(t, "0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f", *k.HeadHookID)
		got = append(got, k.Key)
	}
	require.Equal(t, []string{"a", "b", "c"}, got)
	reqs := s.requests()
	require.Len(t, reqs, 2, "pages fetched")
	for i, wantCursor := range []string{"", "c1"} {
		q := reqs[i].URL.Query()
		require.Equal(t, "/v1/ordering-keys", reqs[i].URL.Path)
		require.Equal(t, "true", q.Get("held"), "page %d query %v", i, q)
		require.Equal(t, "2", q.Get("limit"), "page %d query %v", i, q)
		require.Equal(t, wantCursor, q.Get("cursor"), "page %d query %v", i, q)
	}
}

// TestScheduleSendsTheOrderingKey, and a hook shows it.
func TestScheduleSendsTheOrderingKey(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: http.StatusCreated,
		body: `{"data":{"id":"h","path":"/x","domain":"d","data":{},"postAt":"2030-01-01T00:00:00Z","status":"pending","attempts":0,"postDurationSeconds":0,"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z","orderingKey":"account:42"}}`})
	h, err := s.client.Hooks.Schedule(context.Background(), ScheduleHookRequest{Path: "/x", Data: map[string]any{}, PostIn: "1m", OrderingKey: "account:42"})
	require.NoError(t, err)
	require.Equal(t, "account:42", h.OrderingKey)
	require.JSONEq(t, `{"path":"/x","data":{},"postIn":"1m","orderingKey":"account:42"}`, s.body(0))
}

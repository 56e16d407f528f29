package sundial

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func page(ids []string, next string) answer {
	body := `{"data":[`
	for i, id := range ids {
		if i > 0 {
			body += ","
		}
		body += fmt.Sprintf(`{"id":%q,"path":"/x","domain":"d","data":{},"postAt":"2030-01-01T00:00:00Z","status":"pending","attempts":0,"postDurationSeconds":0,"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z"}`, id)
	}
	body += fmt.Sprintf(`],"meta":{"totalItems":5,"totalItemsCapped":false,"nextCursor":%q}}`, next)
	return answer{status: http.StatusOK, body: body}
}

func TestAllFollowsTheCursor(t *testing.T) {
	t.Parallel()
	s := setup(t, page([]string{"1", "2"}, "c1"), page([]string{"3", "4"}, "c2"), page([]string{"5"}, ""))
	after := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []string
	for h, err := range s.client.Hooks.All(context.Background(), ListHooksParams{Status: StatusPending, Limit: 2, SortBy: "postAt", PostAtAfter: after,
		OrderingKey: "account/42 100%"}) {
		require.NoError(t, err)
		got = append(got, h.ID)
	}
	require.Equal(t, []string{"1", "2", "3", "4", "5"}, got, "hook IDs")
	reqs := s.requests()
	require.Len(t, reqs, 3, "pages fetched")
	for i, wantCursor := range []string{"", "c1", "c2"} {
		q := reqs[i].URL.Query()
		require.Equal(t, wantCursor, q.Get("cursor"), "page %d query %v", i, q)
		require.Equal(t, "2", q.Get("limit"), "page %d query %v", i, q)
		require.Equal(t, "pending", q.Get("status"), "page %d query %v", i, q)
		require.Equal(t, "postAt", q.Get("sortBy"), "page %d query %v", i, q)
		require.Equal(t, "2030-01-01T00:00:00Z", q.Get("postAtAfter"), "page %d query %v", i, q)
		require.Equal(t, "account/42 100%", q.Get("orderingKey"), "page %d query %v", i, q)
	}
}

func TestAllStopsWhenTheLoopBreaks(t *testing.T) {
	t.Parallel()
	s := setup(t, page([]string{"1", "2"}, "c1"), page([]string{"3"}, ""))
	for h, err := range s.client.Hooks.All(context.Background(), ListHooksParams{}) {
		require.NoError(t, err)
		require.Equal(t, "1", h.ID, "the first hook")
		break
	}
	require.Len(t, s.requests(), 1, "pages fetched after a break on the first hook")
}

func TestAllYieldsAnErrorOnce(t *testing.T) {
	t.Parallel()
	s := setup(t, page([]string{"1"}, "c1"),
		answer{status: 400, body: `{"error":"cursor does not match","code":"invalid_request","details":[{"field":"cursor","message":"bad"}],"requestId":"r"}`})
	var ids []string
	var errs []error
	for h, err := range s.client.Hooks.All(context.Background(), ListHooksParams{}) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids = append(ids, h.ID)
	}
	require.Len(t, ids, 1, "ids %v errs %v", ids, errs)
	require.Len(t, errs, 1, "ids %v errs %v", ids, errs)
	var apiErr *APIError
	require.ErrorAs(t, errs[0], &apiErr)
	require.NotEmpty(t, apiErr.Fields(), "error %v", apiErr)
	require.Equal(t, "cursor", apiErr.Fields()[0], "error %v", apiErr)
}

// TestAttemptsCarryTheirHeaders: an attempt's recorded headers decode as
// maps of name to values, names as the API spells them; an attempt without
// them has nil maps.
func TestAttemptsCarryTheirHeaders(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: http.StatusOK, body: `{"data":[` +
		`{"attempt":1,"startedAt":"2030-01-01T00:00:00Z","durationSeconds":0.1,"outcome":"failure","error":"timeout after 10s"},` +
		`{"attempt":2,"startedAt":"2030-01-01T00:01:00Z","durationSeconds":0.2,"outcome":"success","statusCode":200,` +
		`"requestHeaders":{"Sundial-Ack-URL":["https://s.example/v1/async/h/7/[redacted]/ack"]},` +
		`"responseHeaders":{"Set-Cookie":["a=[redacted]","b=[redacted]"]},"responseHeadersOmitted":3}]}`})
	attempts, err := s.client.Hooks.Attempts(context.Background(), "h")
	require.NoError(t, err)
	require.Len(t, attempts, 2)
	require.Nil(t, attempts[0].RequestHeaders)
	require.Nil(t, attempts[0].ResponseHeaders)
	require.Equal(t, []string{"https://s.example/v1/async/h/7/[redacted]/ack"}, attempts[1].RequestHeaders["Sundial-Ack-URL"])
	require.Equal(t, []string{"a=[redacted]", "b=[redacted]"}, attempts[1].ResponseHeaders["Set-Cookie"])
	require.Zero(t, attempts[1].RequestHeadersOmitted)
	require.Equal(t, 3, attempts[1].ResponseHeadersOmitted)
}

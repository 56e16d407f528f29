package sundial

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
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
	for h, err := range s.client.Hooks.All(context.Background(), ListHooksParams{Status: StatusPending, Limit: 2, SortBy: "postAt", PostAtAfter: after}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.ID)
	}
	if fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Fatalf("got %v", got)
	}
	reqs := s.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d pages fetched", len(reqs))
	}
	for i, wantCursor := range []string{"", "c1", "c2"} {
		q := reqs[i].URL.Query()
		if q.Get("cursor") != wantCursor || q.Get("limit") != "2" || q.Get("status") != "pending" ||
			q.Get("sortBy") != "postAt" || q.Get("postAtAfter") != "2030-01-01T00:00:00Z" {
			t.Fatalf("page %d query %v", i, q)
		}
	}
}

func TestAllStopsWhenTheLoopBreaks(t *testing.T) {
	t.Parallel()
	s := setup(t, page([]string{"1", "2"}, "c1"), page([]string{"3"}, ""))
	for h, err := range s.client.Hooks.All(context.Background(), ListHooksParams{}) {
		if err != nil || h.ID != "1" {
			t.Fatalf("%v %v", h.ID, err)
		}
		break
	}
	if n := len(s.requests()); n != 1 {
		t.Fatalf("%d pages fetched after a break on the first hook", n)
	}
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
	var apiErr *APIError
	if len(ids) != 1 || len(errs) != 1 || !errors.As(errs[0], &apiErr) || apiErr.Fields()[0] != "cursor" {
		t.Fatalf("ids %v errs %v", ids, errs)
	}
}
